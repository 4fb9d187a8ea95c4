"""Sub-agents and targeted steering."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from forgeui.demo import graphs as demo_graphs
from runtime import (
    AmbiguousResume,
    CheckpointStore,
    Command,
    Draft,
    DurableExecutor,
    InMemoryCheckpointStore,
    NodeContext,
    NodeError,
    ResumeTarget,
    RunResult,
    StaleResumeTarget,
)

from .helpers import (
    LATEST_KEYS,
    Calls,
    checkpoint_ids,
    checkpoints,
    latest,
    run_checkpoint,
)


def agent(name: str, node: str, calls: Calls) -> DurableExecutor:
    """A one-node sub-agent that asks a person and reports what it got and was told."""
    def work(task: Any, ctx: NodeContext) -> dict[str, Any]:
        calls.hit(node)
        answer = ctx.interrupt({"agent": name, "task": task})
        return {"answer": answer, "steering": ctx.steering}

    return DurableExecutor(nodes=[(node, work)], name=name)


def supervisor(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    """plan → [research_agent, writer_agent] (children, in parallel) → summarize."""
    def plan(topic: Any) -> Any:
        calls.hit("plan")
        return {"topic": topic}

    def summarize(parts: Any) -> Any:
        calls.hit("summarize")
        return parts

    return DurableExecutor(
        nodes=[("plan", plan), ("research_agent", agent("research_agent", "find", calls)),
               ("writer_agent", agent("writer_agent", "draft", calls)),
               ("summarize", summarize)],
        edges={"plan": lambda _: ["research_agent", "writer_agent"],
               "research_agent": lambda _: "summarize", "writer_agent": lambda _: "summarize"},
        store=store, name="supervisor",
    )


def gated(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    """start → [gate (the parent's own question), research_agent (a child)] → join."""
    def gate(x: Any, ctx: NodeContext) -> Any:
        calls.hit("gate")
        return ctx.interrupt("go on?")

    def join(parts: Any) -> Any:
        calls.hit("join")
        return parts

    return DurableExecutor(
        nodes=[("start", lambda x: x), ("gate", gate),
               ("research_agent", agent("research_agent", "find", calls)), ("join", join)],
        edges={"start": lambda _: ["gate", "research_agent"], "gate": lambda _: "join",
               "research_agent": lambda _: "join"},
        store=store, name="supervisor",
    )


def three_levels(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    """top → mid (child) → leaf (grandchild), which asks."""
    leaf = agent("leaf", "investigate", calls)
    mid = DurableExecutor(nodes=[("triage", lambda x: {"triaged": x}), ("leaf", leaf)],
                          name="mid")
    return DurableExecutor(nodes=[("intake", lambda x: x), ("mid", mid),
                                  ("report", lambda x: {"report": x})],
                           store=store, name="top")


def by_agent(result: RunResult) -> dict[str, Any]:
    return {i.sub_agent_id: i for i in result.interrupts}


def target(i: Any, **narrow: Any) -> ResumeTarget:
    return ResumeTarget(i.run_id, **narrow)


def assert_latest(exc: StaleResumeTarget) -> None:
    assert set(exc.latest) >= LATEST_KEYS, exc.latest


# -- child runs -------------------------------------------------------------------------

async def test_child_run_has_its_own_identity_and_checkpoint_chain(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    tree = {tuple(n.namespace): n for n in await ex.get_tree(paused.thread_id)}
    root = tree[("supervisor",)]
    child = tree[("supervisor", "research_agent")]
    assert root.run_id == paused.run_id
    assert root.parent_run_id is None and root.sub_agent_id is None
    assert child.run_id != root.run_id
    assert child.parent_run_id == root.run_id
    assert child.sub_agent_id == "research_agent"
    assert child.thread_id != paused.thread_id
    chain = await checkpoints(ex.store, child.thread_id)
    assert chain and chain[-1].id == child.checkpoint_id
    assert all(cp.run_id == child.run_id for cp in chain)
    assert chain[-1].namespace == ["supervisor", "research_agent"]
    assert chain[-1].parent_run_id == root.run_id
    assert chain[-1].pending_input == {"topic": "q3"}
    root_chain = await checkpoint_ids(ex.store, paused.thread_id)
    assert child.checkpoint_id not in root_chain


async def test_children_run_in_parallel_and_surface_every_interrupt(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    assert paused.interrupted
    tree = {tuple(n.namespace): n for n in await ex.get_tree(paused.thread_id)}
    interrupts = by_agent(paused)
    assert set(interrupts) == {"research_agent", "writer_agent"}
    for name, node in (("research_agent", "find"), ("writer_agent", "draft")):
        i = interrupts[name]
        run = tree[("supervisor", name)]
        assert i.namespace == ["supervisor", name]
        assert i.node == node
        assert i.sub_agent_id == name
        assert i.run_id == run.run_id
        assert i.checkpoint_id == run.checkpoint_id
        assert i.task_id
        assert i.payload == {"agent": name, "task": {"topic": "q3"}}
    assert paused.interrupt_payload == paused.interrupts[0].payload


async def test_interrupts_are_listed_in_a_stable_order(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    again = await ex.get_state(paused.thread_id)
    assert [i.id for i in again.interrupts] == [i.id for i in paused.interrupts]


async def test_resuming_one_child_leaves_its_sibling_untouched(store: CheckpointStore) -> None:
    calls = Calls()
    ex = supervisor(store, calls)
    paused = await ex.run("q3")
    research, writer = by_agent(paused)["research_agent"], by_agent(paused)["writer_agent"]
    writer_thread = (await run_checkpoint(ex.store, writer.run_id)).thread_id
    writer_chain = await checkpoint_ids(ex.store, writer_thread)
    after = await ex.resume_targeted(target(research), "sources ok")
    assert after.interrupted
    (left,) = after.interrupts
    assert left.id == writer.id
    assert left.checkpoint_id == writer.checkpoint_id
    assert await checkpoint_ids(ex.store, writer_thread) == writer_chain
    assert (calls["plan"], calls["find"], calls["draft"], calls["summarize"]) == (1, 2, 1, 0)
    done = await ex.resume_targeted(target(left), "draft ok")
    assert done.status == "completed"
    assert (calls["plan"], calls["find"], calls["draft"], calls["summarize"]) == (1, 2, 2, 1)
    assert done.output == {"research_agent": {"answer": "sources ok", "steering": []},
                           "writer_agent": {"answer": "draft ok", "steering": []}}


async def test_bare_resume_with_two_children_paused_is_ambiguous(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    with pytest.raises(AmbiguousResume):
        await ex.resume(paused.thread_id, "yes")


async def test_resume_map_on_the_root_thread_answers_children_by_id(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    answers = {i.id: f"ok {i.sub_agent_id}" for i in paused.interrupts}
    done = await ex.resume(paused.thread_id, Command(resume_map=answers))
    assert done.status == "completed"
    assert done.output["writer_agent"]["answer"] == "ok writer_agent"
    assert done.output["research_agent"]["answer"] == "ok research_agent"


async def test_nesting_three_levels_and_targeting_the_grandchild_by_namespace(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = three_levels(store, calls)
    paused = await ex.run({"case": 9})
    (i,) = paused.interrupts
    assert i.namespace == ["top", "mid", "leaf"]
    assert i.sub_agent_id == "leaf"
    assert i.node == "investigate"
    tree = {tuple(n.namespace): n for n in await ex.get_tree(paused.thread_id)}
    assert set(tree) == {("top",), ("top", "mid"), ("top", "mid", "leaf")}
    assert tree[("top", "mid", "leaf")].parent_run_id == tree[("top", "mid")].run_id
    assert tree[("top", "mid")].parent_run_id == tree[("top",)].run_id
    assert tree[("top", "mid", "leaf")].run_id == i.run_id
    done = await ex.resume_targeted(
        ResumeTarget(i.run_id, namespace=["top", "mid", "leaf"]), "escalate")
    assert done.status == "completed"
    assert done.output == {"report": {"answer": "escalate", "steering": []}}
    assert calls["investigate"] == 2
    tree = {tuple(n.namespace): n for n in await ex.get_tree(paused.thread_id)}
    assert {n.status for n in tree.values()} == {"completed"}


async def test_resume_on_a_child_thread_answers_that_child(store: CheckpointStore) -> None:
    ex = three_levels(store, Calls())
    paused = await ex.run({"case": 9})
    leaf_thread = (await run_checkpoint(ex.store, paused.interrupts[0].run_id)).thread_id
    done = await ex.resume(leaf_thread, "via child thread")
    assert done.thread_id == paused.thread_id
    assert done.output == {"report": {"answer": "via child thread", "steering": []}}


# -- the parent's own interrupt and child_policy ----------------------------------------

async def test_parent_answer_leaves_children_pending_by_default(store: CheckpointStore) -> None:
    calls = Calls()
    ex = gated(store, calls)
    paused = await ex.run(1)
    gate, child = (next(i for i in paused.interrupts if i.sub_agent_id is s)
                   for s in (None, "research_agent"))
    after = await ex.resume_targeted(ResumeTarget(paused.run_id), "go")
    assert after.interrupted
    assert [i.id for i in after.interrupts] == [child.id]
    assert after.interrupts[0].checkpoint_id == child.checkpoint_id
    assert (calls["gate"], calls["find"], calls["join"]) == (2, 1, 0)
    done = await ex.resume_targeted(target(child), "found")
    assert done.output == {"gate": "go", "research_agent": {"answer": "found", "steering": []}}
    assert (calls["gate"], calls["find"], calls["join"]) == (2, 2, 1)
    assert gate.id != child.id


async def test_child_policy_cancel_cancels_pending_children_and_parent_continues(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = gated(store, calls)
    paused = await ex.run(1)
    child = next(i for i in paused.interrupts if i.sub_agent_id == "research_agent")
    child_thread = (await run_checkpoint(ex.store, child.run_id)).thread_id
    before = await checkpoint_ids(ex.store, child_thread)
    done = await ex.resume_targeted(ResumeTarget(paused.run_id),
                                    Command(resume="go", child_policy="cancel"))
    assert done.status == "completed"
    assert done.interrupts == []
    assert done.output["gate"] == "go"
    assert calls["find"] == 1  # the cancelled child's node is not run again
    assert calls["join"] == 1
    chain = await checkpoints(ex.store, child_thread)
    assert [cp.id for cp in chain][: len(before)] == before
    last = chain[-1]
    assert last.status == "cancelled"
    assert last.interrupts == []
    (record,) = last.resolved
    assert record["id"] == child.id
    assert record["status"] == "cancelled"
    assert any(h["node"] == "find" for h in last.history)
    tree = {tuple(n.namespace): n for n in await ex.get_tree(paused.thread_id)}
    assert tree[("supervisor", "research_agent")].status == "cancelled"
    with pytest.raises(StaleResumeTarget):
        await ex.resume_targeted(target(child), "too late")


# -- steering ---------------------------------------------------------------------------

async def test_steering_note_reaches_ctx_and_not_the_answer(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    research = by_agent(paused)["research_agent"]
    after = await ex.resume_targeted(target(research),
                                     Command(resume="sources ok", steering="cite the ledger"))
    writer = after.interrupts[0]
    done = await ex.resume_targeted(target(writer), "draft ok")
    assert done.output["research_agent"] == {"answer": "sources ok",
                                             "steering": ["cite the ledger"]}
    assert done.output["writer_agent"] == {"answer": "draft ok", "steering": []}
    child_cp = await run_checkpoint(ex.store, research.run_id)
    (note,) = child_cp.steering
    assert note["text"] == "cite the ledger"
    assert note["run_id"] == research.run_id
    assert isinstance(note["at"], int)
    (record,) = child_cp.resolved
    assert record["answer"] == "sources ok"


async def test_steer_records_a_note_without_resuming(store: CheckpointStore) -> None:
    calls = Calls()
    ex = supervisor(store, calls)
    paused = await ex.run("q3")
    writer = by_agent(paused)["writer_agent"]
    note = await ex.steer(ResumeTarget(writer.run_id), "shorter, please")
    assert note["text"] == "shorter, please"
    state = await ex.get_state(paused.thread_id)
    assert {i.id for i in state.interrupts} == {i.id for i in paused.interrupts}
    assert calls["draft"] == 1
    root = await latest(ex.store, paused.thread_id)
    assert [n["text"] for n in root.steering] == ["shorter, please"]
    await ex.steer(ResumeTarget(writer.run_id, interrupt_id=writer.id), "and friendlier")
    done = await ex.resume(paused.thread_id, Command(resume_map={
        i.id: "ok" for i in paused.interrupts}))
    assert done.output["writer_agent"] == {"answer": "ok",
                                           "steering": ["shorter, please", "and friendlier"]}
    assert done.output["research_agent"]["steering"] == []


async def test_steering_on_the_root_run_reaches_root_nodes(store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return {"answer": ctx.interrupt("?"), "steering": ctx.steering}

    ex = DurableExecutor(nodes=[("ask", ask)], name="solo", store=store)
    paused = await ex.run(None)
    done = await ex.resume(paused.thread_id, Command(resume=42, steering="be careful"))
    assert done.output == {"answer": 42, "steering": ["be careful"]}
    cp = await latest(ex.store, paused.thread_id)
    assert [n["text"] for n in cp.steering] == ["be careful"]


async def test_a_note_for_one_task_of_several_reaches_that_task_only(
        store: CheckpointStore) -> None:
    def sign(x: Any, ctx: NodeContext) -> Any:
        return {"answer": ctx.interrupt(ctx.node), "steering": ctx.steering}

    ex = DurableExecutor(
        nodes=[("start", lambda x: x), ("legal", sign), ("finance", sign),
               ("record", lambda parts: parts)],
        edges={"start": lambda _: ["legal", "finance"], "legal": lambda _: "record",
               "finance": lambda _: "record"}, name="signoffs", store=store)
    paused = await ex.run(None)
    asked = {i.node: i for i in paused.interrupts}
    legal, finance = asked["legal"], asked["finance"]
    await ex.steer(ResumeTarget(paused.run_id, task_id=legal.task_id), "by task")
    await ex.steer(ResumeTarget(paused.run_id, interrupt_id=legal.id), "by interrupt")
    await ex.steer(ResumeTarget(paused.run_id), "to the run")
    root = await latest(ex.store, paused.thread_id)
    assert [n["task_id"] for n in root.steering] == [legal.task_id, legal.task_id, None]
    done = await ex.resume(paused.thread_id, Command(resume_map={legal.id: 1, finance.id: 2}))
    assert done.output["legal"]["steering"] == ["by task", "by interrupt", "to the run"]
    assert done.output["finance"]["steering"] == ["to the run"]


# -- stale targets ----------------------------------------------------------------------

async def test_run_id_not_in_the_tree_is_stale(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    await ex.run("q3")
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume_targeted(ResumeTarget(uuid.uuid4().hex), "x")
    assert_latest(info.value)


async def test_run_of_another_tree_is_not_mixed_up(store: CheckpointStore) -> None:
    """A target names its run; it answers that run's tree, never the caller's other tree."""
    ex = supervisor(store, Calls())
    a = await ex.run("a")
    b = await ex.run("b")
    research_b = by_agent(b)["research_agent"]
    result = await ex.resume_targeted(target(research_b), "for b")
    assert result.thread_id == b.thread_id
    assert {i.id for i in (await ex.get_state(a.thread_id)).interrupts} == {
        i.id for i in a.interrupts}


async def test_task_no_longer_pending_is_stale(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    research = by_agent(paused)["research_agent"]
    await ex.resume_targeted(target(research), "done")
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume_targeted(target(research, task_id=research.task_id), "again")
    assert_latest(info.value)
    assert info.value.latest["run_id"] == research.run_id
    assert info.value.latest["status"] == "completed"
    assert info.value.latest["interrupts"] == []


async def test_answered_interrupt_is_stale(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    research = by_agent(paused)["research_agent"]
    await ex.resume_targeted(target(research, interrupt_id=research.id), "done")
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume_targeted(target(research, interrupt_id=research.id), "again")
    assert_latest(info.value)


async def child_asking_twice(store: CheckpointStore) -> tuple[DurableExecutor, RunResult]:
    """A parent whose one sub-agent asks two questions in a row, paused at the first."""
    def twice(x: Any, ctx: NodeContext) -> Any:
        return [ctx.interrupt(1), ctx.interrupt(2)]

    child = DurableExecutor(nodes=[("twice", twice)], name="child")
    ex = DurableExecutor(nodes=[("child", child)], name="parent", store=store)
    return ex, await ex.run(None)


async def test_answered_interrupt_of_a_still_running_child_is_stale(store: CheckpointStore) -> None:
    """The child asked twice; the first id is answered, the run is still paused."""
    ex, paused = await child_asking_twice(store)
    first = paused.interrupts[0]
    again = await ex.resume_targeted(target(first, interrupt_id=first.id), "a")
    second = again.interrupts[0]
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume_targeted(target(first, interrupt_id=first.id), "b")
    assert_latest(info.value)
    assert info.value.latest["run_id"] == first.run_id
    assert info.value.latest["status"] == "interrupted"
    assert info.value.latest["checkpoint_id"] == second.checkpoint_id
    assert [i["id"] for i in info.value.latest["interrupts"]] == [second.id]


async def test_namespace_mismatch_is_stale(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    research = by_agent(paused)["research_agent"]
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume_targeted(
            ResumeTarget(research.run_id, namespace=["supervisor", "writer_agent"]), "x")
    assert_latest(info.value)
    assert info.value.latest["run_id"] == research.run_id
    assert info.value.latest["checkpoint_id"] == research.checkpoint_id
    assert info.value.latest["status"] == "interrupted"
    assert [i["id"] for i in info.value.latest["interrupts"]] == [research.id]
    state = await ex.get_state(paused.thread_id)
    assert len(state.interrupts) == 2


async def test_steering_a_stale_target_is_refused(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    research = by_agent(paused)["research_agent"]
    with pytest.raises(StaleResumeTarget):
        await ex.steer(ResumeTarget(research.run_id, namespace=["supervisor"]), "x")
    await ex.resume_targeted(target(research), "done")
    with pytest.raises(StaleResumeTarget):
        await ex.steer(target(research, interrupt_id=research.id), "late note")


# -- the tree as a whole ----------------------------------------------------------------

async def test_get_tree_reports_each_run(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    research = by_agent(paused)["research_agent"]
    await ex.resume_targeted(target(research), "ok")
    nodes = await ex.get_tree(paused.thread_id)
    assert nodes[0].namespace == ["supervisor"]
    tree = {tuple(n.namespace): n for n in nodes}
    assert set(tree) == {("supervisor",), ("supervisor", "research_agent"),
                         ("supervisor", "writer_agent")}
    assert tree[("supervisor",)].status == "interrupted"
    assert tree[("supervisor", "research_agent")].status == "completed"
    assert tree[("supervisor", "research_agent")].interrupts == []
    writer = tree[("supervisor", "writer_agent")]
    assert writer.status == "interrupted"
    assert [i.node for i in writer.interrupts] == ["draft"]
    for node in nodes:
        assert node.checkpoint_id == (await latest(ex.store, node.thread_id)).id


async def test_cancel_a_whole_tree(store: CheckpointStore) -> None:
    calls = Calls()
    ex = three_levels(store, calls)
    paused = await ex.run({"case": 1})
    result = await ex.cancel(paused.thread_id)
    assert result.status == "cancelled"
    assert result.interrupts == []
    assert result.output is None
    nodes = await ex.get_tree(paused.thread_id)
    assert len(nodes) == 3
    assert {n.status for n in nodes} == {"cancelled"}
    leaf = await run_checkpoint(ex.store, paused.interrupts[0].run_id)
    assert [(r["id"], r["status"]) for r in leaf.resolved] == [
        (paused.interrupts[0].id, "cancelled")]
    assert calls["investigate"] == 1
    with pytest.raises(StaleResumeTarget):
        await ex.resume(paused.thread_id, "too late")


async def test_cancel_one_sub_agent_leaves_its_sibling(store: CheckpointStore) -> None:
    calls = Calls()
    ex = supervisor(store, calls)
    paused = await ex.run("q3")
    research, writer = by_agent(paused)["research_agent"], by_agent(paused)["writer_agent"]
    after = await ex.cancel(ResumeTarget(research.run_id))
    assert after.interrupted
    assert [i.id for i in after.interrupts] == [writer.id]
    assert after.interrupts[0].checkpoint_id == writer.checkpoint_id
    cancelled = await run_checkpoint(ex.store, research.run_id)
    assert cancelled.status == "cancelled"
    done = await ex.resume(paused.thread_id, "draft ok")
    assert done.status == "completed"
    assert done.output["writer_agent"]["answer"] == "draft ok"
    assert (calls["find"], calls["draft"], calls["summarize"]) == (1, 2, 1)


async def test_child_policy_cancel_reaches_grandchildren(store: CheckpointStore) -> None:
    calls = Calls()
    mid = DurableExecutor(nodes=[("leaf", agent("leaf", "investigate", calls))], name="mid")

    def gate(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("go on?")

    ex = DurableExecutor(
        nodes=[("start", lambda x: x), ("gate", gate), ("mid", mid), ("end", lambda p: p)],
        edges={"start": lambda _: ["gate", "mid"], "gate": lambda _: "end",
               "mid": lambda _: "end"},
        store=store, name="top")
    paused = await ex.run(1)
    leaf = next(i for i in paused.interrupts if i.sub_agent_id == "leaf")
    done = await ex.resume_targeted(ResumeTarget(paused.run_id),
                                    Command(resume="stop", child_policy="cancel"))
    assert done.status == "completed"
    nodes = {tuple(n.namespace): n for n in await ex.get_tree(paused.thread_id)}
    assert nodes[("top", "mid")].status == "cancelled"
    assert nodes[("top", "mid", "leaf")].status == "cancelled"
    leaf_cp = await run_checkpoint(ex.store, leaf.run_id)
    assert [(r["id"], r["status"]) for r in leaf_cp.resolved] == [(leaf.id, "cancelled")]
    assert calls["investigate"] == 1


async def test_steering_a_grandchild_by_namespace(store: CheckpointStore) -> None:
    ex = three_levels(store, Calls())
    paused = await ex.run({"case": 2})
    (i,) = paused.interrupts
    await ex.steer(ResumeTarget(i.run_id, namespace=["top", "mid", "leaf"]), "check twice")
    done = await ex.resume_targeted(ResumeTarget(i.run_id, interrupt_id=i.id), "yes")
    assert done.output == {"report": {"answer": "yes", "steering": ["check twice"]}}


async def test_expected_checkpoint_id_of_a_child(store: CheckpointStore) -> None:
    ex, paused = await child_asking_twice(store)
    first = paused.interrupts[0]
    again = await ex.resume_targeted(
        target(first), Command(resume="a", expected_checkpoint_id=first.checkpoint_id))
    second = again.interrupts[0]
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume_targeted(
            target(second), Command(resume="b", expected_checkpoint_id=first.checkpoint_id))
    assert info.value.latest["checkpoint_id"] == second.checkpoint_id
    done = await ex.resume_targeted(
        target(second), Command(resume="b", expected_checkpoint_id=second.checkpoint_id))
    assert done.output == ["a", "b"]


async def test_one_child_finishes_while_its_sibling_waits(store: CheckpointStore) -> None:
    calls = Calls()
    quick = DurableExecutor(nodes=[("quick", lambda x: "fast")], name="quick_agent")
    ex = DurableExecutor(
        nodes=[("plan", lambda x: x), ("quick_agent", quick),
               ("slow_agent", agent("slow_agent", "slow", calls)), ("join", lambda p: p)],
        edges={"plan": lambda _: ["quick_agent", "slow_agent"],
               "quick_agent": lambda _: "join", "slow_agent": lambda _: "join"},
        store=store, name="sup")
    paused = await ex.run(0)
    assert [i.sub_agent_id for i in paused.interrupts] == ["slow_agent"]
    tree = {tuple(n.namespace): n.status for n in await ex.get_tree(paused.thread_id)}
    assert tree[("sup", "quick_agent")] == "completed"
    done = await ex.resume(paused.thread_id, "slow ok")
    assert done.output == {"quick_agent": "fast",
                           "slow_agent": {"answer": "slow ok", "steering": []}}


async def test_fork_of_a_tree_copies_children_with_new_ids(store: CheckpointStore) -> None:
    calls = Calls()
    ex = supervisor(store, calls)
    paused = await ex.run("q3")
    original_chains = {i.run_id: await checkpoint_ids(
        ex.store, (await run_checkpoint(ex.store, i.run_id)).thread_id)
        for i in paused.interrupts}
    fork = await ex.fork(paused.thread_id)
    forked = await ex.get_state(fork)
    assert sorted(i.sub_agent_id or "" for i in forked.interrupts) == [
        "research_agent", "writer_agent"]
    assert not {i.id for i in forked.interrupts} & {i.id for i in paused.interrupts}
    assert not {i.run_id for i in forked.interrupts} & {i.run_id for i in paused.interrupts}
    done = await ex.resume(fork, Command(resume_map={i.id: "fork" for i in forked.interrupts}))
    assert done.output["writer_agent"]["answer"] == "fork"
    for run_id, chain in original_chains.items():
        cp = await run_checkpoint(ex.store, run_id)
        assert await checkpoint_ids(ex.store, cp.thread_id) == chain
    assert (await ex.get_state(paused.thread_id)).interrupts == paused.interrupts
    assert calls["plan"] == 1


async def test_sub_agents_under_exit_durability(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    ex.durability = "exit"
    paused = await ex.run("q3")
    assert {i.sub_agent_id for i in paused.interrupts} == {"research_agent", "writer_agent"}
    done = await ex.resume(paused.thread_id, Command(resume_map={
        i.id: "ok" for i in paused.interrupts}))
    assert done.status == "completed"
    assert done.output["writer_agent"]["answer"] == "ok"


async def test_get_state_of_a_child_thread_reports_the_root(store: CheckpointStore) -> None:
    ex = supervisor(store, Calls())
    paused = await ex.run("q3")
    child_thread = (await run_checkpoint(ex.store, paused.interrupts[0].run_id)).thread_id
    state = await ex.get_state(child_thread)
    assert state.thread_id == paused.thread_id
    assert [i.id for i in state.interrupts] == [i.id for i in paused.interrupts]


class FailingChildSaves(InMemoryCheckpointStore):
    """Loses the next save of any sub-agent thread, as a crash at that moment would."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_children = False

    async def save_head(self, draft: Draft) -> None:
        if self.fail_children and draft.parent_run_id is not None:
            self.fail_children = False
            raise OSError("disk gone while saving the sub-agent")
        await super().save_head(draft)


async def test_an_answer_survives_a_crash_between_a_root_save_and_the_childs() -> None:
    """The root may save mid-step (a sibling's ctx.once) while a child applies an answer.

    That root checkpoint must still hold the child's answer until the child's own save
    lands; otherwise a crash in between loses an accepted answer.
    """
    store = FailingChildSaves()
    root_saved = threading.Event()

    def ask(x: Any, ctx: NodeContext) -> Any:
        answer = ctx.interrupt({"question": "child?"})
        assert root_saved.wait(5)  # the child finishes only after the sibling's save
        return answer

    def sibling(x: Any, ctx: NodeContext) -> Any:
        answer = ctx.interrupt({"question": "sibling?"})
        ctx.once("effect", lambda: "done")  # saves the root mid-step
        store.fail_children = True  # ...and the child's save after it is lost
        root_saved.set()
        return answer

    child = DurableExecutor(nodes=[("ask", ask)], name="child")
    root = DurableExecutor(
        nodes=[("start", lambda x: x), ("child", child), ("sibling", sibling),
               ("end", lambda parts: parts)],
        edges={"start": lambda _: ["child", "sibling"], "child": lambda _: "end",
               "sibling": lambda _: "end"},
        store=store, name="root")
    paused = await root.run({})
    answers = {i.id: f"answer to {i.node}" for i in paused.interrupts}
    with pytest.raises((NodeError, OSError)):
        await root.resume(paused.thread_id, Command(resume_map=answers))
    latest = await store.load(paused.thread_id)
    assert latest is not None
    child_interrupt = next(i for i in paused.interrupts if i.node == "ask")
    assert child_interrupt.id in latest.engine.answers  # kept: the child never saved it
    done = await root.recover(paused.thread_id)
    assert done.status == "completed"
    assert done.output == {"child": "answer to ask", "sibling": "answer to sibling"}


async def test_sync_nodes_of_parallel_sub_agents_run_at_the_same_time(
        store: CheckpointStore) -> None:
    """Each child has one task, but its siblings run beside it: no child blocks the loop."""
    both_in = threading.Barrier(2, timeout=5)

    def meet(x: Any) -> str:
        both_in.wait()  # breaks (and fails the node) unless the other child is in too
        return "met"

    left = DurableExecutor(nodes=[("meet", meet)], name="left")
    right = DurableExecutor(nodes=[("meet", meet)], name="right")
    root = DurableExecutor(
        nodes=[("fan", lambda x: x), ("left", left), ("right", right),
               ("join", lambda parts: parts)],
        edges={"fan": lambda _: ["left", "right"], "left": lambda _: "join",
               "right": lambda _: "join"}, name="root", store=store)
    done = await root.run({})
    assert done.output == {"left": "met", "right": "met"}


async def test_a_cancelled_sub_agent_hands_its_parent_an_explicit_marker(
        store: CheckpointStore) -> None:
    ex = demo_graphs.supervisor.with_store(store)
    paused = await ex.run({"topic": "q3"})
    by_agent = {i.sub_agent_id: i for i in paused.interrupts}
    await ex.cancel(ResumeTarget(by_agent["writer_agent"].run_id))
    done = await ex.resume_targeted(target(by_agent["research_agent"]), "accept")
    assert done.status == "completed"
    report = done.output["report"]
    assert report["writer_agent"] == {"cancelled": True, "node": "writer_agent"}
    assert report["research_agent"]["review"] == "accept"
    root = await latest(ex.store, paused.thread_id)
    assert {"node": "writer_agent", "cancelled": True,
            "output": {"cancelled": True, "node": "writer_agent"}} in root.history
