"""The contenders in the resume race (``test_processes``): processes of their own, each
with its own database connection.

``python -m tests.forgeui.race_worker THREAD_ID GO_FILE COUNT [GRAPH]`` sets Django up and
loads ``GRAPH`` (``race`` by default) once, then forks ``COUNT`` contenders: imports are
shared, connections are not (the parent never opens one). Contender ``n`` connects, prints
``ready``, waits for ``GO_FILE`` to appear, resumes the thread with the value ``vn`` and
prints ``{"outcome": "won" | "stale" | "conflict", ...}``. Each line is one ``write`` of
less than a pipe's atomic size, so the contenders' lines never mix. The parent exits 1
if any contender failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import traceback
from typing import Any


def contend(executor: Any, thread_id: str, value: str, go_file: str) -> dict[str, Any]:
    from runtime.errors import CheckpointConflict, StaleResumeTarget

    assert asyncio.run(executor.store.load(thread_id)) is not None  # connected and warm
    say("ready")
    deadline = time.monotonic() + 120  # a sibling died before its "ready": no go comes
    while not os.path.exists(go_file):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{go_file} never appeared")
        time.sleep(0.002)
    try:
        result = executor.resume_sync(thread_id, value)
    except StaleResumeTarget as exc:
        return {"outcome": "stale", "message": str(exc)[:500]}
    except CheckpointConflict as exc:
        return {"outcome": "conflict", "message": str(exc)[:500]}
    return {"outcome": "won", "status": result.status, "value": value}


def say(line: str) -> None:
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def main(thread_id: str, go_file: str, count: str, graph: str = "race") -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    import django

    django.setup()
    from django.db import connections

    from forgeui.runs import registry

    executor = registry.get_executor(graph)
    # A connection made here would be shared by every child: the race would be on one.
    assert all(conn.connection is None for conn in connections.all(initialized_only=True))
    children = []
    for n in range(int(count)):
        if (pid := os.fork()) == 0:  # a contender: it ends here, never returns
            try:
                say(json.dumps(contend(executor, thread_id, f"v{n}", go_file)))
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
                os._exit(1)
            os._exit(0)  # no atexit handlers: they are the parent's
        children.append(pid)
    failed = [pid for pid in children if os.waitpid(pid, 0)[1] != 0]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:5])
