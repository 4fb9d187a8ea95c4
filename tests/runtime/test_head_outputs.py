"""A head keeps what its run has done, bounded by the graph: each node's latest output
(``engine.outputs``, the ``state`` the history adds up to) and the routes taken from one
step to the next (``engine.routes``), so a page reads them without the history. Every
checkpoint of a thread, however it is read back (a head, a replay, a fork), agrees with
its history."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from runtime import (
    Checkpoint,
    CheckpointStore,
    Command,
    DurableExecutor,
    InMemoryCheckpointStore,
    NodeContext,
    ResumeTarget,
)
from runtime.checkpoint import HeadStore, implements

from .helpers import checkpoints
from .test_records import records_of


def routes_of(chain: list[Checkpoint]) -> set[tuple[str, str]]:
    """Node pairs of consecutive steps, read from every checkpoint of a run."""
    steps: dict[int, set[str]] = defaultdict(set)
    for cp in chain:
        steps[cp.step].update(task["node"] for task in cp.engine.tasks)
    return {(a, b) for step, names in steps.items() for a in names
            for b in steps.get(step + 1, ())}


async def agrees_with_history(store: CheckpointStore, thread_id: str,
                              every_step: bool = True) -> list[Checkpoint]:
    """Every checkpoint of the thread, each checked against its history; the latest head
    too, loaded as a run goes on from it. The routes are those the checkpoints show, or
    more when not ``every_step`` was saved in this thread (a fork keeps its original's)."""
    chain = await checkpoints(store, thread_id)
    assert chain
    for cp in chain:
        assert cp.engine.outputs == cp.state, (cp.step, cp.engine.outputs, cp.state)
        assert list(cp.engine.outputs or {}) == list(cp.state)  # in the history's order
    routes = set(map(tuple, chain[-1].engine.routes or []))
    assert routes == routes_of(chain) if every_step else routes >= routes_of(chain)
    if implements(store, HeadStore):
        head = await store.load_head(thread_id)  # type: ignore[attr-defined]
        assert head.engine.outputs == chain[-1].state
    return chain


def count(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "n": state["n"] + 1}


def ask(state: Any, ctx: NodeContext) -> dict[str, Any]:
    return {"state": state, "answer": ctx.interrupt({"question": "go on?"})}


def looping(store: CheckpointStore, **options: Any) -> DurableExecutor:
    """``count`` loops on itself ``steps`` times, then a person is asked."""
    return DurableExecutor(
        nodes=[("count", count), ("ask", ask)],
        edges={"count": lambda out, ctx=None: "count" if out["n"] < out["steps"] else "ask"},
        store=store, name="looping", **options)


async def test_a_loop_keeps_its_latest_outputs_and_routes_in_the_head(
        store: CheckpointStore) -> None:
    ex = looping(store)
    paused = await ex.run({"n": 0, "steps": 40})
    chain = await agrees_with_history(store, paused.thread_id)
    assert chain[-1].engine.outputs == {"count": {"n": 40, "steps": 40}}
    assert sorted(map(tuple, chain[-1].engine.routes or [])) == [("count", "ask"),
                                                                 ("count", "count")]
    await ex.resume(paused.thread_id, "yes")
    chain = await agrees_with_history(store, paused.thread_id)
    assert set(chain[-1].engine.outputs or {}) == {"count", "ask"}


async def test_scalar_and_parallel_outputs_and_a_new_run_on_the_thread(
        store: CheckpointStore) -> None:
    ex = DurableExecutor(
        nodes=[("split", lambda n: n), ("left", lambda n: n * 2),
               ("right", lambda n: {"r": n}), ("join", lambda both: both),
               ("ask", ask)],
        edges={"split": lambda out, ctx=None: ["left", "right"],
               "left": lambda out, ctx=None: "join", "right": lambda out, ctx=None: "join",
               "join": lambda out, ctx=None: "ask"},
        store=store, name="fan")
    paused = await ex.run(3, thread_id="fan")
    chain = await agrees_with_history(store, "fan")
    assert chain[-1].engine.outputs == {"split": 3, "left": 6, "right": {"r": 3},
                                        "join": {"left": 6, "right": {"r": 3}}}
    await ex.resume(paused.thread_id, "done")
    await ex.run(5, thread_id="fan")  # a new run starts with nothing done
    chain = await agrees_with_history(store, "fan")
    assert chain[-1].engine.outputs == {"split": 5, "left": 10, "right": {"r": 5},
                                        "join": {"left": 10, "right": {"r": 5}}}


async def test_a_node_that_changes_its_input_in_place_and_exit_durability(
        store: CheckpointStore) -> None:
    def append(inp: dict[str, Any]) -> dict[str, Any]:
        inp["items"].append(len(inp["items"]))
        return {"items": inp["items"]}

    for durability in ("sync", "exit"):
        ex = DurableExecutor([("start", lambda data: {"items": [0]}), ("append", append),
                              ("again", append), ("ask", ask)],
                             store=store, name="in-place", durability=durability)
        thread = (await ex.run({}, thread_id=f"in-place-{durability}")).thread_id
        chain = await agrees_with_history(store, thread, every_step=durability == "sync")
        assert set(map(tuple, chain[-1].engine.routes or [])) == {
            ("start", "append"), ("append", "again"), ("again", "ask")}
        assert chain[-1].engine.outputs == {"start": {"items": [0]},
                                            "append": {"items": [0, 1]},
                                            "again": {"items": [0, 1, 2]}}


def agent(name: str) -> DurableExecutor:
    def work(task: Any, ctx: NodeContext) -> dict[str, Any]:
        return {"task": task, "answer": ctx.interrupt({"agent": name})}
    return DurableExecutor(nodes=[("work", work)], name=name)


async def test_sub_agents_a_cancelled_one_and_a_fork(store: CheckpointStore) -> None:
    ex = DurableExecutor(
        nodes=[("plan", lambda task: {"topic": task}), ("one", agent("one")),
               ("two", agent("two")), ("join", lambda both: both)],
        edges={"plan": lambda out, ctx=None: ["one", "two"],
               "one": lambda out, ctx=None: "join", "two": lambda out, ctx=None: "join"},
        store=store, name="team")
    paused = await ex.run("q3", thread_id="team")
    [one, two] = sorted(paused.interrupts, key=lambda i: i.sub_agent_id or "")
    await ex.resume_targeted(ResumeTarget(one.run_id, interrupt_id=one.id), "found")
    chain = await agrees_with_history(store, one.thread_id)
    assert chain[-1].engine.outputs == {"work": {"task": {"topic": "q3"}, "answer": "found"}}
    forked = await ex.fork("team")
    await ex.cancel(ResumeTarget(two.run_id))
    chain = await agrees_with_history(store, "team")
    assert set(chain[-1].engine.outputs or {}) == {"plan", "one", "join"}  # not "two"
    copy = await agrees_with_history(store, forked, every_step=False)
    assert sorted(map(tuple, copy[-1].engine.routes or [])) == [("plan", "one"),
                                                                ("plan", "two")]
    assert copy[-1].engine.outputs == {"plan": {"topic": "q3"},
                                       "one": {"task": {"topic": "q3"}, "answer": "found"}}


async def test_a_checkpoint_saved_by_hand_keeps_none() -> None:
    store = InMemoryCheckpointStore()
    cp = Checkpoint(id="c1", thread_id="t", node="a", interrupt_payload=None,
                    pending_input=None, created_at=1, state={"a": 1},
                    history=[{"node": "a", "output": 1}])
    await store.save(cp)
    loaded = await store.load("t")
    assert loaded is not None and loaded.engine.outputs is None and loaded.state == {"a": 1}
    assert loaded == cp


async def test_the_outputs_are_stored_once_by_reference() -> None:
    store = InMemoryCheckpointStore()  # a record store, to read its records
    big = {"text": "x" * 5000}
    ex = DurableExecutor([("make", lambda _: big), ("keep", lambda inp: {**inp, "k": 1}),
                          ("ask", ask)], store=store, name="once")
    await ex.run({}, thread_id="once")
    # The large value is written once, in the record of the step that made it.
    assert sum(record.count("x" * 5000) for record in records_of(store, "once")) == 1
    assert (await store.load("once")).engine.outputs["make"] == big  # type: ignore[union-attr]


async def test_a_command_answer_keeps_outputs_in_order(store: CheckpointStore) -> None:
    ex = looping(store)
    paused = await ex.run({"n": 0, "steps": 2}, thread_id="cmd")
    await ex.resume(paused.thread_id, Command(resume="yes"))
    chain = await agrees_with_history(store, "cmd")
    assert list(chain[-1].engine.outputs or {}) == ["count", "ask"]
