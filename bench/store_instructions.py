"""Instructions per start and per resume on ``DjangoCheckpointStore`` (SQLite), counted.

    python bench/store_instructions.py [--runs 300] [--store memory]

Wall time on a shared VM moves by tens of percent between identical runs, which hides a
change worth a few percent. ``valgrind --tool=callgrind`` counts instructions instead,
the same on every run (repeats agree to ~0.05 %). The workload is the store benchmark's
(``store_vs_langgraph.py``, sync API): ``--runs`` starts to the interrupt, then as many
resumes to the end, on a fresh SQLite file, in one child process that marks where setup,
the starts and the resumes end, so each is counted on its own (the garbage collector is
frozen after setup, so a collection does not land in one count and not the other).
Waiting for the disk is not counted: this measures CPU work only. Compare two versions
by running it in each. ``--store memory`` counts the same runs on
``InMemoryCheckpointStore``: the runtime's own work. Needs valgrind (Debian:
``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from callgrind import mark, phases, require_valgrind  # beside this script

ROOT = Path(__file__).resolve().parent.parent


def workload(store: str, runs: int) -> None:
    """The counted child: setup, ``runs`` starts, then each of them resumed, each part
    ended by a mark."""
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    from runtime_vs_langgraph import forge_executor

    if store == "memory":
        from runtime import InMemoryCheckpointStore

        run(forge_executor(InMemoryCheckpointStore()), runs)
        return
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/instructions.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.DEBUG = False  # as deployed: DEBUG logs every statement
    call_command("migrate", verbosity=0)
    from forgeui.store import DjangoCheckpointStore

    run(forge_executor(DjangoCheckpointStore()), runs)


def run(ex: Any, runs: int) -> None:
    """One warm-up run (modules first imported there are not counted), then the runs."""
    import gc

    ex.resume_sync(ex.run_sync({"amount": -1}).thread_id, "yes")
    gc.collect()
    gc.freeze()
    gc.disable()
    mark()
    paused = [ex.run_sync({"amount": i}) for i in range(runs)]
    mark()
    done = [ex.resume_sync(p.thread_id, "yes") for p in paused]
    mark()
    assert all(d.output["done"] for d in done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workload(args.child[0], int(args.child[1]))
        return
    require_valgrind()
    n = args.runs
    _, starts, resumes, _ = phases(3, __file__, "--child", args.store, str(n))
    print(f"{args.store}, {n} runs, instructions (callgrind)")
    print(f"  per start  {starts / n / 1e6:8.3f} M")
    print(f"  per resume {resumes / n / 1e6:8.3f} M")


if __name__ == "__main__":
    main()
