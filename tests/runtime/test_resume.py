"""resume: answers by id, ambiguity, stale targets, answers consumed once."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import (
    AmbiguousResume,
    CheckpointStore,
    Command,
    DurableExecutor,
    NodeContext,
    ResumeError,
    StaleResumeTarget,
)

from .helpers import LATEST_KEYS, Calls, checkpoint_ids, latest, pending_by_node


def approvals(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    """start → [legal, finance, audit] in parallel → decide; legal and finance ask."""
    def ask(name: str) -> Any:
        def node(x: Any, ctx: NodeContext) -> Any:
            calls.hit(name)
            return {name: ctx.interrupt(f"{name}?")}
        return node

    def audit(x: Any) -> str:
        calls.hit("audit")
        return "audited"

    return DurableExecutor(
        nodes=[("start", lambda x: x), ("legal", ask("legal")), ("finance", ask("finance")),
               ("audit", audit), ("decide", lambda parts: parts)],
        edges={"start": lambda _: ["legal", "finance", "audit"], "legal": lambda _: "decide",
               "finance": lambda _: "decide", "audit": lambda _: "decide"},
        name="approvals",
        store=store,
    )


def single(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    def ask(x: Any, ctx: NodeContext) -> Any:
        calls.hit("ask")
        return ctx.interrupt("ok?")

    return DurableExecutor(nodes=[("ask", ask), ("after", lambda x: {"got": x})], store=store)


def assert_latest(exc: StaleResumeTarget, thread_id: str) -> None:
    assert set(exc.latest) >= LATEST_KEYS, exc.latest
    assert exc.latest["thread_id"] == thread_id


async def test_resume_map_answers_several_interrupts_by_id(store: CheckpointStore) -> None:
    calls = Calls()
    ex = approvals(store, calls)
    paused = await ex.run({"amount": 3})
    by_node = pending_by_node(paused)
    assert set(by_node) == {"legal", "finance"}
    done = await ex.resume(paused.thread_id, Command(resume_map={
        by_node["legal"].id: "legal ok", by_node["finance"].id: "finance ok"}))
    assert done.status == "completed"
    assert done.output == {"legal": {"legal": "legal ok"},
                           "finance": {"finance": "finance ok"}, "audit": "audited"}
    assert calls["audit"] == 1


async def test_resuming_one_parallel_task_reruns_only_that_task(store: CheckpointStore) -> None:
    calls = Calls()
    ex = approvals(store, calls)
    paused = await ex.run(None)
    by_node = pending_by_node(paused)
    after = await ex.resume(paused.thread_id,
                            Command(resume_map={by_node["legal"].id: "yes"}))
    assert after.interrupted
    (left,) = after.interrupts
    assert left.node == "finance"
    assert left.id == by_node["finance"].id
    assert (calls["legal"], calls["finance"], calls["audit"]) == (2, 1, 1)
    done = await ex.resume(paused.thread_id, "fine")
    assert done.output["legal"] == {"legal": "yes"}
    assert done.output["finance"] == {"finance": "fine"}
    assert (calls["legal"], calls["finance"], calls["audit"]) == (2, 2, 1)


async def test_bare_value_with_several_pending_is_ambiguous_and_changes_nothing(
        store: CheckpointStore) -> None:
    calls = Calls()
    ex = approvals(store, calls)
    paused = await ex.run(None)
    before = await checkpoint_ids(ex.store, paused.thread_id)
    with pytest.raises(AmbiguousResume) as info:
        await ex.resume(paused.thread_id, "yes")
    assert isinstance(info.value, ResumeError)
    for pending in paused.interrupts:
        assert pending.id in str(info.value)
    assert {i.id for i in info.value.pending} == {i.id for i in paused.interrupts}
    assert await checkpoint_ids(ex.store, paused.thread_id) == before
    state = await ex.get_state(paused.thread_id)
    assert [i.id for i in state.interrupts] == [i.id for i in paused.interrupts]
    assert (calls["legal"], calls["finance"]) == (1, 1)


async def test_nothing_pending_is_stale(store: CheckpointStore) -> None:
    ex = single(store, Calls())
    paused = await ex.run(None)
    done = await ex.resume(paused.thread_id, "yes")
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume(paused.thread_id, "again")
    assert_latest(info.value, paused.thread_id)
    assert info.value.latest["status"] == "completed"
    assert info.value.latest["checkpoint_id"] == done.checkpoint_id
    assert info.value.latest["run_id"] == paused.run_id
    assert info.value.latest["interrupts"] == []


async def test_unknown_interrupt_id_is_stale(store: CheckpointStore) -> None:
    ex = single(store, Calls())
    paused = await ex.run(None)
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume(paused.thread_id, Command(resume_map={"no-such-id": 1}))
    assert_latest(info.value, paused.thread_id)
    assert info.value.latest["status"] == "interrupted"
    assert info.value.latest["checkpoint_id"] == paused.checkpoint_id
    assert [i["id"] for i in info.value.latest["interrupts"]] == [paused.interrupts[0].id]


async def test_already_answered_interrupt_id_is_stale(store: CheckpointStore) -> None:
    def twice(x: Any, ctx: NodeContext) -> Any:
        return [ctx.interrupt(1), ctx.interrupt(2)]

    ex = DurableExecutor(nodes=[("twice", twice)], store=store)
    paused = await ex.run(None)
    answered = paused.interrupts[0].id
    again = await ex.resume(paused.thread_id, Command(resume_map={answered: "a"}))
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume(paused.thread_id, Command(resume_map={answered: "b"}))
    assert_latest(info.value, paused.thread_id)
    assert info.value.latest["checkpoint_id"] == again.checkpoint_id
    assert [i["id"] for i in info.value.latest["interrupts"]] == [again.interrupts[0].id]
    assert (await ex.resume(paused.thread_id, "c")).output == ["a", "c"]


async def test_expected_checkpoint_id_must_be_the_latest(store: CheckpointStore) -> None:
    def twice(x: Any, ctx: NodeContext) -> Any:
        return [ctx.interrupt(1), ctx.interrupt(2)]

    ex = DurableExecutor(nodes=[("twice", twice)], store=store)
    first = await ex.run(None)
    second = await ex.resume(first.thread_id,
                             Command(resume="a", expected_checkpoint_id=first.checkpoint_id))
    assert second.interrupted
    before = await checkpoint_ids(ex.store, first.thread_id)
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume(first.thread_id,
                        Command(resume="b", expected_checkpoint_id=first.checkpoint_id))
    assert_latest(info.value, first.thread_id)
    assert info.value.latest["checkpoint_id"] == second.checkpoint_id
    assert await checkpoint_ids(ex.store, first.thread_id) == before
    done = await ex.resume(first.thread_id,
                           Command(resume="b", expected_checkpoint_id=second.checkpoint_id))
    assert done.output == ["a", "b"]


async def test_unknown_thread_is_stale(store: CheckpointStore) -> None:
    ex = single(store, Calls())
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume("never-started", "yes")
    assert_latest(info.value, "never-started")


async def test_an_answer_is_consumed_once(store: CheckpointStore) -> None:
    """The answer to order 0 is never handed to the order 1 call as well."""
    calls = Calls()

    def twice(x: Any, ctx: NodeContext) -> Any:
        calls.hit("twice")
        return [ctx.interrupt("first"), ctx.interrupt("second")]

    ex = DurableExecutor(nodes=[("twice", twice)], store=store)
    paused = await ex.run(None)
    again = await ex.resume(paused.thread_id, "only once")
    assert again.interrupted
    assert again.interrupt_payload == "second"
    assert again.interrupts[0].order == 1
    assert (await ex.resume(paused.thread_id, "two")).output == ["only once", "two"]


async def test_resume_map_with_a_key_not_pending_is_refused_whole(store: CheckpointStore) -> None:
    calls = Calls()
    ex = approvals(store, calls)
    paused = await ex.run(None)
    legal = pending_by_node(paused)["legal"]
    before = await checkpoint_ids(ex.store, paused.thread_id)
    with pytest.raises(StaleResumeTarget) as info:
        await ex.resume(paused.thread_id,
                        Command(resume_map={legal.id: "yes", "not-pending": "no"}))
    assert_latest(info.value, paused.thread_id)
    assert await checkpoint_ids(ex.store, paused.thread_id) == before
    assert calls["legal"] == 1
    state = await ex.get_state(paused.thread_id)
    assert {i.id for i in state.interrupts} == {i.id for i in paused.interrupts}


async def test_answers_are_recorded_in_the_checkpoint(store: CheckpointStore) -> None:
    ex = single(store, Calls())
    paused = await ex.run(None)
    await ex.resume(paused.thread_id, {"ok": True})
    cp = await latest(ex.store, paused.thread_id)
    (record,) = cp.resolved
    assert record["id"] == paused.interrupts[0].id
    assert record["status"] == "answered"
    assert record["answer"] == {"ok": True}


async def test_non_json_answer_is_refused_and_changes_nothing(store: CheckpointStore) -> None:
    ex = single(store, Calls())
    paused = await ex.run(None)
    with pytest.raises(ResumeError):
        await ex.resume(paused.thread_id, {1, 2})
    assert (await ex.get_state(paused.thread_id)).interrupts == paused.interrupts
    assert (await ex.resume(paused.thread_id, 1)).output == {"got": 1}


async def test_resume_with_store_none_is_a_resume_error() -> None:
    ex = DurableExecutor(nodes=[("a", lambda x: x)], store=None)
    with pytest.raises(ResumeError):
        await ex.resume("t", "yes")


async def test_none_is_a_valid_answer(store: CheckpointStore) -> None:
    ex = single(store, Calls())
    paused = await ex.run(None)
    assert (await ex.resume(paused.thread_id, None)).output == {"got": None}
