"""One contender in the resume race (``test_processes``): its own process, its own Django.

``python -m tests.forgeui.race_worker THREAD_ID VALUE GO_FILE [GRAPH]`` connects, prints
``ready``, waits for ``GO_FILE`` to appear, resumes the thread of ``GRAPH`` (``race`` by
default) with ``VALUE`` and prints ``{"outcome": "won" | "stale" | "conflict", ...}`` as
its last line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time


def main(thread_id: str, value: str, go_file: str, graph: str = "race") -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    import django

    django.setup()
    from forgeui.runs import registry
    from runtime.errors import CheckpointConflict, StaleResumeTarget

    executor = registry.get_executor(graph)
    assert asyncio.run(executor.store.load(thread_id)) is not None  # connected and warm
    print("ready", flush=True)
    while not os.path.exists(go_file):
        time.sleep(0.002)
    try:
        result = executor.resume_sync(thread_id, value)
    except StaleResumeTarget as exc:
        print(json.dumps({"outcome": "stale", "message": str(exc)}))
    except CheckpointConflict as exc:
        print(json.dumps({"outcome": "conflict", "message": str(exc)}))
    else:
        print(json.dumps({"outcome": "won", "status": result.status, "value": value}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
