"""Instructions per turn of the long-thread chat, early and late, counted beside LangGraph.

    python bench/turn_instructions.py [--turns 1000] [--window 40]

The workload of ``long_thread.py`` (one node that appends a ~200-byte message per turn
and pauses; ``resume_sync`` / ``invoke(Command(resume=...))`` each turn) on the memory
stores: forge's ``InMemoryCheckpointStore`` and LangGraph's ``InMemorySaver`` with a plain
``operator.add`` list. Wall time on this shared VM moves by tens of percent, even CPU
time, which hides whether a turn's cost grows with the conversation. ``valgrind
--tool=callgrind`` counts instructions instead, the same on every run.

Each side runs in one child process that marks where its first ``window`` turns begin
and end, and where its last ``window`` begin and end, so each window is counted on its
own; their ratio says how much a turn grows with the conversation. The garbage collector
is frozen after setup, so a collection does not land in one count and not the other.
Needs valgrind (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import gc
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from callgrind import mark, phases, require_valgrind  # beside this script

ROOT = Path(__file__).resolve().parent.parent
SIDES = ("forge", "langgraph-plain")


def workload(side_name: str, turns: int, window: int) -> None:
    """The counted child: start the chat, then answer ``turns`` turns, marking where the
    first and the last ``window`` turns begin and end."""
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    from long_thread import forge_side, langgraph_saver, langgraph_side

    with ExitStack() as stack:
        if side_name == "forge":
            from runtime import InMemoryCheckpointStore

            side = forge_side(InMemoryCheckpointStore())
        else:
            saver, _ = langgraph_saver("memory", stack)
            side = langgraph_side(saver, delta=False)
        side.start()
        gc.collect()
        gc.freeze()
        ends = [window, turns - window, turns]  # where a phase ends (two may meet)
        mark()
        for n in range(1, turns + 1):
            side.turn(n)
            for _ in range(ends.count(n)):
                mark()


def counted(side: str, turns: int, window: int) -> tuple[int, int]:
    """Instructions of the first and of the last ``window`` turns, under callgrind."""
    counts = phases(4, __file__, "--child", side, str(turns), str(window))
    return counts[1], counts[3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=40)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workload(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    require_valgrind()
    turns, window = args.turns, args.window
    if not 0 < window <= turns - window:
        raise SystemExit("--window must be at least 1 and at most half of --turns")
    with ThreadPoolExecutor(max_workers=2) as pool:  # the machine's two cores
        counts = dict(zip(SIDES, pool.map(lambda s: counted(s, turns, window), SIDES),
                          strict=True))
    print(f"memory stores, instructions per turn (callgrind), {window}-turn windows")
    print(f"{'side':16} {'first':>10} {'last':>10} {'last/first':>11}")
    late: dict[str, float] = {}
    for side, (early, late_window) in counts.items():
        first, last = early / window, late_window / window
        late[side] = last
        print(f"{side:16} {first / 1e6:9.2f}M {last / 1e6:9.2f}M {last / first:10.2f}x")
    print(f"forge's last turns / LangGraph plain's: {late['forge'] / late['langgraph-plain']:.2f}x")


if __name__ == "__main__":
    main()
