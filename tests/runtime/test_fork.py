"""fork: copy a thread as of any checkpoint; the original stays as it was."""

from __future__ import annotations

from typing import Any

import pytest

from forgeui.demo import graphs as demo_graphs
from runtime import (
    CheckpointStore,
    Command,
    DurableExecutor,
    NodeContext,
    ResumeError,
    StaleResumeTarget,
)

from .helpers import Calls, checkpoints, latest


def two_questions(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    """prepare → first (asks) → second (asks) → done."""
    def prepare(x: Any) -> Any:
        calls.hit("prepare")
        return {"x": x}

    def ask(name: str) -> Any:
        def node(x: Any, ctx: NodeContext) -> Any:
            calls.hit(name)
            return {**x, name: ctx.interrupt(f"{name}?")}
        return node

    return DurableExecutor(nodes=[("prepare", prepare), ("first", ask("first")),
                                  ("second", ask("second")), ("done", lambda x: x)], store=store)


async def snapshot(ex: DurableExecutor, thread_id: str) -> list[dict[str, Any]]:
    return [cp.to_dict() for cp in await checkpoints(ex.store, thread_id)]


async def test_fork_latest_records_forked_from_and_resumes_differently(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = two_questions(store, calls)
    paused = await ex.run(1)
    fork = await ex.fork(paused.thread_id)
    assert fork != paused.thread_id
    forked_cp = await latest(ex.store, fork)
    assert forked_cp.forked_from == paused.checkpoint_id
    assert forked_cp.thread_id == fork
    assert forked_cp.state == {"prepare": {"x": 1}}
    state = await ex.get_state(fork)
    assert state.interrupted and state.interrupt_payload == "first?"
    a = await ex.resume(paused.thread_id, "A")
    b = await ex.resume(fork, "B")
    assert a.interrupt_payload == b.interrupt_payload == "second?"
    a = await ex.resume(paused.thread_id, 1)
    b = await ex.resume(fork, 2)
    assert a.output == {"x": 1, "first": "A", "second": 1}
    assert b.output == {"x": 1, "first": "B", "second": 2}
    assert calls["prepare"] == 1


async def test_fork_leaves_the_original_untouched(store: CheckpointStore) -> None:
    ex = two_questions(store, Calls())
    paused = await ex.run(1)
    before = await snapshot(ex, paused.thread_id)
    fork = await ex.fork(paused.thread_id)
    await ex.resume(fork, "B")
    await ex.resume(fork, "B2")
    assert await snapshot(ex, paused.thread_id) == before
    assert (await ex.get_state(paused.thread_id)).interrupts == paused.interrupts


async def test_fork_from_an_earlier_checkpoint(store: CheckpointStore) -> None:
    calls = Calls()
    ex = two_questions(store, calls)
    at_first = await ex.run(1)
    at_second = await ex.resume(at_first.thread_id, "A")
    done = await ex.resume(at_first.thread_id, "A2")
    history = await snapshot(ex, at_first.thread_id)
    fork = await ex.fork(at_first.thread_id, at_first.checkpoint_id)
    assert (await latest(ex.store, fork)).forked_from == at_first.checkpoint_id
    state = await ex.get_state(fork)
    assert state.interrupt_payload == "first?"
    assert state.interrupts[0].id not in {at_first.interrupts[0].id, at_second.interrupts[0].id}
    again = await ex.resume(fork, "other branch")
    assert again.interrupt_payload == "second?"
    branch = await ex.resume(fork, "x")
    assert branch.output == {"x": 1, "first": "other branch", "second": "x"}
    assert done.output == {"x": 1, "first": "A", "second": "A2"}
    assert await snapshot(ex, at_first.thread_id) == history
    assert calls["prepare"] == 1


async def test_fork_of_a_completed_checkpoint_can_be_forked_again_at_the_pause(
        store: CheckpointStore) -> None:
    """Forking a finished thread at its paused point explores another answer."""
    ex = two_questions(store, Calls())
    first = await ex.run(1)
    second = await ex.resume(first.thread_id, "A")
    await ex.resume(first.thread_id, "B")
    fork = await ex.fork(first.thread_id, second.checkpoint_id)
    result = await ex.resume(fork, "C")
    assert result.output == {"x": 1, "first": "A", "second": "C"}


async def test_fork_of_a_completed_thread_is_completed(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("a", lambda x: x + 1)], store=store)
    done = await ex.run(1)
    fork = await ex.fork(done.thread_id)
    state = await ex.get_state(fork)
    assert state.status == "completed"
    assert state.output == 2


async def test_fork_of_unknown_thread_or_foreign_checkpoint_is_stale(
        store: CheckpointStore) -> None:
    ex = two_questions(store, Calls())
    a = await ex.run(1)
    b = await ex.run(2)
    with pytest.raises(StaleResumeTarget):
        await ex.fork("no-such-thread")
    with pytest.raises(StaleResumeTarget):
        await ex.fork(a.thread_id, b.checkpoint_id)


async def test_answering_the_original_interrupt_id_in_the_fork_is_stale(
        store: CheckpointStore) -> None:
    """Fork ids are new, so an answer meant for the original cannot land in the fork."""
    ex = two_questions(store, Calls())
    paused = await ex.run(1)
    fork = await ex.fork(paused.thread_id)
    with pytest.raises(StaleResumeTarget):
        await ex.resume(fork, Command(resume_map={paused.interrupts[0].id: "x"}))


# -- edit-then-fork: a paused node's input changed in the copy ---------------------------------


async def test_a_fork_with_an_edited_input_runs_the_paused_node_again_from_it(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = two_questions(store, calls)
    paused = await ex.run(1)
    (asked,) = paused.interrupts
    fork = await ex.fork(paused.thread_id, inputs={asked.id: {"x": 99}})
    copied = await latest(ex.store, fork)
    assert copied.status == "failed" and "recover to go on" in copied.error["message"]
    assert copied.interrupts == []
    before = calls.counts["first"]
    again = await ex.recover(fork)
    assert again.status == "interrupted" and calls.counts["first"] == before + 1
    done = await ex.resume(fork, "yes")
    done = await ex.resume(fork, "also")
    assert done.output == {"x": 99, "first": "yes", "second": "also"}
    original = await ex.resume(paused.thread_id, "no")
    assert original.interrupts[0].node == "second"  # the original kept its own input


async def test_a_fork_can_edit_the_input_of_a_node_paused_inside_a_sub_agent(
        store: CheckpointStore) -> None:
    ex = demo_graphs.supervisor.with_store(store)
    paused = await ex.run({"topic": "q3"})
    by_agent = {i.sub_agent_id: i for i in paused.interrupts}
    fork = await ex.fork(paused.thread_id,
                         inputs={by_agent["writer_agent"].id: {"topic": "edited"}})
    again = await ex.recover(fork)
    drafts = {i.sub_agent_id: i.payload for i in again.interrupts}
    assert drafts["writer_agent"]["draft"] == "Draft about edited."
    assert drafts["research_agent"]["sources"][0].startswith("q3")  # its sibling as it was
    original = await ex.get_state(paused.thread_id)
    assert {i.payload.get("draft") for i in original.interrupts} >= {"Draft about q3."}


async def test_an_edit_naming_no_pending_interrupt_forks_nothing(store: CheckpointStore) -> None:
    ex = two_questions(store, Calls())
    paused = await ex.run(1)
    with pytest.raises(ResumeError, match="not pending at the checkpoint forked"):
        await ex.fork(paused.thread_id, inputs={"nope": 1})
    with pytest.raises(ResumeError, match="must be JSON"):
        await ex.fork(paused.thread_id, inputs={paused.interrupts[0].id: {1, 2}})
