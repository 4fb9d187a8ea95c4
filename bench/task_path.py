"""A sync caller's two ways to run a graph on ``DjangoCheckpointStore``: the executor's
sync twins, and ``async_to_sync`` around its async methods.

    python bench/task_path.py [--db postgres|sqlite] [--threads 200] [--rounds 8]

``executor.run_sync`` and ``executor.resume_targeted_sync`` run lone sync steps on the
caller's own thread with no event loop; ``async_to_sync(executor.run)`` and
``async_to_sync(executor.resume_targeted)`` make an event loop in a thread of its own per
call, and a trip from it back to the caller's thread for the store. The tasks
(``forgeui.runs.tasks``) are coroutines now, so a thread-based backend pays the second
way per task; ``forge_worker`` awaits them on its loop and pays neither. The workload is the
store benchmark's (``store_vs_langgraph.py``: A starts to the interrupt, B resumes to the
end); the two ways take turns (``--rounds``), so load from anything else falls on both.
PostgreSQL uses the database ``forge_bench`` on 127.0.0.1 (``FORGE_BENCH_DB`` names
another), created fresh.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

Phases = Callable[[int], tuple[float, float]]


def sides(db: str) -> dict[str, Phases]:
    """The two ways, each timing ``n`` starts then their ``n`` targeted resumes."""
    from store_vs_langgraph import django_on_fresh

    django_on_fresh(db)
    from asgiref.sync import async_to_sync
    from django.conf import settings
    from django.core.management import call_command

    settings.DEBUG = False  # as deployed: DEBUG logs every statement
    call_command("migrate", verbosity=0)
    from runtime_vs_langgraph import forge_executor

    from forgeui.store import DjangoCheckpointStore
    from runtime import ResumeTarget, RunResult

    ex = forge_executor(DjangoCheckpointStore())

    def timed(start: Callable[[dict[str, Any]], RunResult],
              resume: Callable[[ResumeTarget, str], RunResult]) -> Phases:
        def phases(n: int) -> tuple[float, float]:
            t0 = time.perf_counter()
            paused = [start({"amount": i}) for i in range(n)]
            a = time.perf_counter() - t0
            targets = [ResumeTarget(p.run_id, interrupt_id=p.interrupts[0].id) for p in paused]
            t0 = time.perf_counter()
            done = [resume(target, "yes") for target in targets]
            b = time.perf_counter() - t0
            assert all(d.status == "completed" for d in done)
            return a, b
        return phases

    return {"sync twins (now)": timed(ex.run_sync, ex.resume_targeted_sync),
            "async_to_sync (before)": timed(async_to_sync(ex.run),
                                            async_to_sync(ex.resume_targeted))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--threads", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    ways = sides(args.db)
    totals = {name: [0.0, 0.0] for name in ways}
    for _ in range(args.rounds):
        for name, phases in ways.items():
            a, b = phases(args.threads)
            totals[name][0] += a
            totals[name][1] += b
    runs = args.threads * args.rounds
    print(f"{args.db}: {runs} starts and {runs} targeted resumes per way")
    for name, (a, b) in totals.items():
        print(f"  {name:<24} A {a / runs * 1e3:.3f} ms/start ({runs / a:,.0f}/s)   "
              f"B {b / runs * 1e3:.3f} ms/resume ({runs / b:,.0f}/s)")
    (now_a, now_b), (before_a, before_b) = totals.values()
    print(f"  before / now: A {before_a / now_a:.2f}x, B {before_b / now_b:.2f}x")


if __name__ == "__main__":
    main()
