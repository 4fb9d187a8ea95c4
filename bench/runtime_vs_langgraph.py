"""Runtime benchmark: forge's executor vs LangGraph, same workload, same process.

Graph: ``prepare`` (adds ~200 bytes of state) -> ``approve`` (interrupt) -> ``execute``.
  A  N fresh threads run to the interrupt          (starts/s)
  B  resume all N to completion, results checked   (resumes/s)
  C  one thread through 200 interrupt/resume cycles, then list its whole history
  D  fork 100 finished threads from their paused checkpoint, resume each fork

Run: ``.venv/bin/python bench/runtime_vs_langgraph.py [--threads 1000]``
(LangGraph comes with the ``bench`` extra: ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime import DurableExecutor, InMemoryCheckpointStore, NodeContext

NOTE = "x" * 200


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# -- forge ---------------------------------------------------------------------------

def forge_executor(store: Any, durability: str = "sync") -> DurableExecutor:
    def prepare(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "note": NOTE}

    def approve(data: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        answer = ctx.interrupt({"question": "Approve?", "amount": data["amount"]})
        return {**data, "answer": answer}

    def execute(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "done": True}

    return DurableExecutor(nodes=[("prepare", prepare), ("approve", approve),
                                  ("execute", execute)], store=store, name="bench",
                           durability=durability)  # type: ignore[arg-type]


async def forge_phases(n: int, forks: int, cycles: int, store: Any = None,
                       durability: str = "sync") -> dict[str, float]:
    ex = forge_executor(store if store is not None else InMemoryCheckpointStore(), durability)
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    paused = [await ex.run({"amount": i}) for i in range(n)]
    out["A"] = time.perf_counter() - t0
    assert all(r.interrupted for r in paused)
    t0 = time.perf_counter()
    done = [await ex.resume(r.thread_id, "yes") for r in paused]
    out["B"] = time.perf_counter() - t0
    assert all(d.output["answer"] == "yes" and d.output["done"] for d in done)
    t0 = time.perf_counter()
    thread = "cycles"
    for i in range(cycles):
        await ex.run({"amount": i}, thread_id=thread)
        await ex.resume(thread, "ok")
    history = await ex.store.list(thread)
    out["C"] = time.perf_counter() - t0
    assert history and history[-1].status == "completed"
    t0 = time.perf_counter()
    for r in paused[:forks]:
        fork = await ex.fork(r.thread_id, r.checkpoint_id)
        res = await ex.resume(fork, "no")
        assert res.output["answer"] == "no"
    out["D"] = time.perf_counter() - t0
    out["checkpoints_per_run"] = len(await ex.store.list(paused[0].thread_id))
    return out


# -- LangGraph -----------------------------------------------------------------------

def langgraph_graph(saver: Any) -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict, total=False):
        amount: int
        note: str
        answer: Any
        done: bool

    def prepare(state: State) -> State:
        return {"note": NOTE}

    def approve(state: State) -> State:
        return {"answer": interrupt({"question": "Approve?", "amount": state["amount"]})}

    def execute(state: State) -> State:
        return {"done": True}

    builder = StateGraph(State)
    builder.add_node("prepare", prepare)
    builder.add_node("approve", approve)
    builder.add_node("execute", execute)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "approve")
    builder.add_edge("approve", "execute")
    builder.add_edge("execute", END)
    return builder.compile(checkpointer=saver)


def langgraph_phases(n: int, forks: int, cycles: int, saver: Any = None) -> dict[str, float]:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    graph = langgraph_graph(saver if saver is not None else InMemorySaver())
    cfg = [{"configurable": {"thread_id": f"t{i}"}} for i in range(n)]
    out: dict[str, float] = {}
    out["A"] = timed(lambda: [graph.invoke({"amount": i}, cfg[i]) for i in range(n)])
    paused_ids = [graph.get_state(c).config["configurable"]["checkpoint_id"] for c in cfg[:forks]]
    results: list[Any] = []
    out["B"] = timed(lambda: results.extend(graph.invoke(Command(resume="yes"), c) for c in cfg))
    assert all(r["answer"] == "yes" and r["done"] for r in results)

    def phase_c() -> None:
        c = {"configurable": {"thread_id": "cycles"}}
        for i in range(cycles):
            graph.invoke({"amount": i}, c)
            graph.invoke(Command(resume="ok"), c)
        assert list(graph.get_state_history(c))

    out["C"] = timed(phase_c)

    def phase_d() -> None:
        # LangGraph's fork: replay from the paused checkpoint (a new branch of the same
        # thread, paused again at the interrupt), then resume that branch.
        for i, cid in enumerate(paused_ids):
            graph.invoke(None, {"configurable": {"thread_id": f"t{i}", "checkpoint_id": cid}})
            res = graph.invoke(Command(resume="no"), {"configurable": {"thread_id": f"t{i}"}})
            assert res["answer"] == "no"

    out["D"] = timed(phase_d)
    out["checkpoints_per_run"] = len(list(graph.get_state_history(cfg[0])))
    return out


# -- report --------------------------------------------------------------------------

def report(n: int, forks: int, cycles: int, ours: dict[str, float],
           theirs: dict[str, float], label: str) -> None:
    counts = {"A": n, "B": n, "C": cycles, "D": forks}
    units = {"A": "starts/s", "B": "resumes/s", "C": "cycles/s", "D": "fork+resume/s"}
    print(f"\n{label}")
    print(f"{'phase':<6}{'forge':>14}{'langgraph':>14}{'ratio':>8}  unit")
    for phase in "ABCD":
        a, b = counts[phase] / ours[phase], counts[phase] / theirs[phase]
        print(f"{phase:<6}{a:>14,.0f}{b:>14,.0f}{a / b:>7.1f}x  {units[phase]}")
    print(f"checkpoints per finished run: forge {ours['checkpoints_per_run']:.0f}, "
          f"langgraph {theirs['checkpoints_per_run']:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument("--forks", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=200)
    args = parser.parse_args()
    n, forks, cycles = args.threads, args.forks, args.cycles
    theirs = langgraph_phases(n, forks, cycles)
    ours = asyncio.run(forge_phases(n, forks, cycles))
    report(n, forks, cycles, ours, theirs, "in-memory store, durability=sync (every step)")
    ours_exit = asyncio.run(forge_phases(n, forks, cycles, durability="exit"))
    report(n, forks, cycles, ours_exit, theirs, "forge durability=exit vs LangGraph default")


if __name__ == "__main__":
    main()
