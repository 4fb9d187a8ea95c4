"""Static breakpoints: pause before or after a node without touching it."""

from __future__ import annotations

from typing import Any

from runtime import CheckpointStore, DurableExecutor, NodeContext

from .helpers import Calls, latest


def pipeline(store: CheckpointStore, calls: Calls, **breakpoints: Any) -> DurableExecutor:
    def step(name: str) -> Any:
        def node(x: list[str]) -> list[str]:
            calls.hit(name)
            return [*x, name]
        return node

    return DurableExecutor(nodes=[("build", step("build")), ("deploy", step("deploy")),
                                  ("verify", step("verify"))],
                           store=store, **breakpoints)


async def test_interrupt_before_pauses_with_the_input(store: CheckpointStore) -> None:
    calls = Calls()
    ex = pipeline(store, calls, interrupt_before=["deploy"])
    paused = await ex.run([])
    assert paused.interrupted
    assert paused.interrupt_payload == {"kind": "before", "node": "deploy", "input": ["build"]}
    (i,) = paused.interrupts
    assert i.node == "deploy"
    assert (calls["build"], calls["deploy"]) == (1, 0)


async def test_interrupt_before_resume_runs_the_node_and_records_the_answer(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = pipeline(store, calls, interrupt_before=["deploy"])
    paused = await ex.run([])
    done = await ex.resume(paused.thread_id, {"approved_by": "ann"})
    assert done.output == ["build", "deploy", "verify"]
    assert (calls["build"], calls["deploy"], calls["verify"]) == (1, 1, 1)
    cp = await latest(ex.store, paused.thread_id)
    (record,) = cp.resolved
    assert record["id"] == paused.interrupts[0].id
    assert record["answer"] == {"approved_by": "ann"}


async def test_interrupt_after_pauses_with_the_output(store: CheckpointStore) -> None:
    calls = Calls()
    ex = pipeline(store, calls, interrupt_after=["build"])
    paused = await ex.run([])
    assert paused.interrupt_payload == {"kind": "after", "node": "build", "output": ["build"]}
    assert (calls["build"], calls["deploy"]) == (1, 0)


async def test_interrupt_after_resume_continues_without_rerunning_the_node(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = pipeline(store, calls, interrupt_after=["build"])
    paused = await ex.run([])
    done = await ex.resume(paused.thread_id, "looks good")
    assert done.output == ["build", "deploy", "verify"]
    assert (calls["build"], calls["deploy"], calls["verify"]) == (1, 1, 1)
    cp = await latest(ex.store, paused.thread_id)
    assert [r["answer"] for r in cp.resolved] == ["looks good"]


async def test_before_and_after_on_several_nodes_pause_in_turn(store: CheckpointStore) -> None:
    calls = Calls()
    ex = pipeline(store, calls, interrupt_before=["deploy", "verify"], interrupt_after=["deploy"])
    result = await ex.run([])
    kinds: list[tuple[str, str]] = []
    while result.interrupted:
        payload = result.interrupt_payload
        kinds.append((payload["kind"], payload["node"]))
        result = await ex.resume(result.thread_id, len(kinds))
    assert kinds == [("before", "deploy"), ("after", "deploy"), ("before", "verify")]
    assert result.output == ["build", "deploy", "verify"]
    cp = await latest(ex.store, result.thread_id)
    assert [r["answer"] for r in cp.resolved] == [1, 2, 3]
    assert calls["deploy"] == 1


async def test_breakpoint_on_the_first_node(store: CheckpointStore) -> None:
    calls = Calls()
    ex = pipeline(store, calls, interrupt_before=["build"])
    paused = await ex.run(["seed"])
    assert paused.interrupt_payload == {"kind": "before", "node": "build", "input": ["seed"]}
    assert calls["build"] == 0
    done = await ex.resume(paused.thread_id, None)
    assert done.output == ["seed", "build", "deploy", "verify"]


def with_sub_agent(store: CheckpointStore, calls: Calls, **breakpoints: Any) -> DurableExecutor:
    """prepare → reviewer (a sub-agent that asks) → publish."""
    def review(x: Any, ctx: NodeContext) -> Any:
        calls.hit("review")
        return {**x, "review": ctx.interrupt("ok?")}

    reviewer = DurableExecutor(nodes=[("review", review)], name="reviewer")
    return DurableExecutor(
        nodes=[("prepare", lambda x: {"p": x}), ("reviewer", reviewer),
               ("publish", lambda x: {**x, "published": True})],
        store=store, name="root", **breakpoints)


async def test_interrupt_before_a_sub_agent_node(store: CheckpointStore) -> None:
    """A node may be a DurableExecutor; breakpoints name nodes of either kind."""
    calls = Calls()
    ex = with_sub_agent(store, calls, interrupt_before=["reviewer"])
    paused = await ex.run(1)
    assert paused.interrupt_payload == {"kind": "before", "node": "reviewer", "input": {"p": 1}}
    assert [i.sub_agent_id for i in paused.interrupts] == [None]
    assert calls["review"] == 0
    inside = await ex.resume(paused.thread_id, "start reviewing")
    assert [i.sub_agent_id for i in inside.interrupts] == ["reviewer"]
    done = await ex.resume(paused.thread_id, "fine")
    assert done.output == {"p": 1, "review": "fine", "published": True}


async def test_interrupt_after_a_sub_agent_node(store: CheckpointStore) -> None:
    calls = Calls()
    ex = with_sub_agent(store, calls, interrupt_after=["reviewer"])
    inside = await ex.run(1)
    assert [i.sub_agent_id for i in inside.interrupts] == ["reviewer"]
    after = await ex.resume(inside.thread_id, "fine")
    assert after.interrupt_payload == {"kind": "after", "node": "reviewer",
                                       "output": {"p": 1, "review": "fine"}}
    done = await ex.resume(inside.thread_id, "publish it")
    assert done.output == {"p": 1, "review": "fine", "published": True}
    assert calls["review"] == 2
