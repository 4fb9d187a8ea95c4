"""Tree benchmark: does answering a sub-agent get slower as its tree's history grows?

A root fans out to ``--children`` sub-agents (50 by default); each asks ``--asks``
questions in turn (20: 1,000 ended interrupts in all). Every answer is a targeted resume
of one child (``resume_targeted_sync``), round-robin over the children, so the tree keeps
all of them paused while its ended interrupts pile up. Printed: the median latency of the
first round of answers and of the last round with every child still paused, and their
ratio. A ratio near 1 means a resume costs what its step does, not what the tree has behind it.

Run: ``.venv/bin/python bench/tree_resume.py [--store memory|sqlite] [--children 50]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def ask_loop(asks: int) -> Any:
    def ask(data: dict[str, Any], ctx: Any) -> dict[str, Any]:
        answers = [ctx.interrupt({"question": f"#{n}"}) for n in range(asks)]
        return {"answers": answers}
    return ask


def build(store: Any, children: int, asks: int) -> Any:
    from runtime import DurableExecutor

    agents = [(f"agent{n}", DurableExecutor([("ask", ask_loop(asks))], store=store,
                                            name=f"agent{n}")) for n in range(children)]
    names = [name for name, _ in agents]
    return DurableExecutor([("fan", lambda data: data), *agents, ("join", lambda data: data)],
                           edges={"fan": lambda out, ctx=None: names,
                                  **{name: (lambda out, ctx=None: "join") for name in names}},
                           store=store, name="tree")


def make_store(kind: str) -> Any:
    if kind == "memory":
        from runtime import InMemoryCheckpointStore
        return InMemoryCheckpointStore()
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/tree.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    import django
    from django.core.management import call_command
    django.setup()
    call_command("migrate", verbosity=0)
    from forgeui.store import DjangoCheckpointStore
    return DjangoCheckpointStore()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--children", type=int, default=50)
    parser.add_argument("--asks", type=int, default=20)
    args = parser.parse_args()
    from runtime import ResumeTarget

    store = make_store(args.store)
    tree = build(store, args.children, args.asks)
    result = tree.run_sync({"go": True})
    times = []
    while result.interrupts:
        for interrupt in list(result.interrupts)[:args.children]:
            started = time.perf_counter()
            result = tree.resume_targeted_sync(
                ResumeTarget(interrupt.run_id, interrupt_id=interrupt.id), "yes")
            times.append(time.perf_counter() - started)
    head = store.load_head_sync(result.thread_id)
    # Round by round every child is answered once; the last round ends them, so the one
    # before it is the latest with the whole tree still paused.
    rounds = [times[i:i + args.children] for i in range(0, len(times), args.children)]
    first, last = statistics.median(rounds[0]), statistics.median(rounds[-2])
    print(f"{args.store}: {len(times)} answers to {args.children} sub-agents, "
          f"status {result.status}")
    print(f"  resume median, first round {first * 1e3:.2f} ms, round {len(rounds) - 1} "
          f"{last * 1e3:.2f} ms, ratio {last / first:.2f}")
    if head is not None:
        print(f"  the root's latest head holds {len(head.engine.children)} child summaries; the "
              f"{len(times)} ended interrupts are in step records, not in any head")


if __name__ == "__main__":
    main()
