"""interrupt(): a pause that is durable before it is reported."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from runtime import (
    CheckpointStore,
    Command,
    Draft,
    DurableExecutor,
    InMemoryCheckpointStore,
    InterruptSignal,
    NodeContext,
    NodeError,
    ResumeError,
)

from .helpers import Calls, latest, pending_by_node


class FailingSaveStore(InMemoryCheckpointStore):
    """Refuses to save the first ``interrupted`` checkpoint (a database going away)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[Draft] = []

    async def save_head(self, draft: Draft) -> None:
        if draft.status == "interrupted" and not self.refused:
            self.refused.append(copy.deepcopy(draft))
            raise OSError("disk full")
        await super().save_head(draft)


class BlockingSaveStore(InMemoryCheckpointStore):
    """While armed, holds every ``interrupted`` save until the test lets it through."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = True
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.saved = False

    async def save_head(self, draft: Draft) -> None:
        hold = self.armed and draft.status == "interrupted"
        if hold:
            self.entered.set()
            await self.release.wait()
        await super().save_head(draft)
        if hold:
            self.saved = True


def asker(calls: Calls) -> Any:
    def ask(x: Any, ctx: NodeContext) -> Any:
        calls.hit("ask")
        return {"x": x, "answer": ctx.interrupt({"q": x})}
    return ask


def test_interrupt_signal_is_not_an_exception() -> None:
    assert issubclass(InterruptSignal, BaseException)
    assert not issubclass(InterruptSignal, Exception)


async def test_except_exception_in_node_cannot_swallow_a_pause(store: CheckpointStore) -> None:
    swallowed: list[BaseException] = []

    def careless(x: Any, ctx: NodeContext) -> Any:
        try:
            return ctx.interrupt("stop here")
        except Exception as exc:  # what careless node code does
            swallowed.append(exc)
            return "swallowed"

    ex = DurableExecutor(nodes=[("careless", careless)], store=store)
    result = await ex.run(None)
    assert result.interrupted
    assert result.interrupt_payload == "stop here"
    assert swallowed == []
    assert (await ex.resume(result.thread_id, "go")).output == "go"


async def test_interrupted_result_only_after_save_returned() -> None:
    store = BlockingSaveStore()
    ex = DurableExecutor(nodes=[("ask", asker(Calls()))], store=store)
    running = asyncio.create_task(ex.run(1))
    await asyncio.wait_for(store.entered.wait(), timeout=5)
    await asyncio.sleep(0.05)
    assert not running.done(), "run returned while its checkpoint was still being saved"
    store.release.set()
    result = await asyncio.wait_for(running, timeout=5)
    assert store.saved
    assert result.interrupted
    assert (await latest(store, result.thread_id)).status == "interrupted"


async def test_resume_reports_the_next_pause_only_after_it_is_saved() -> None:
    def twice(x: Any, ctx: NodeContext) -> Any:
        return [ctx.interrupt(1), ctx.interrupt(2)]

    store = BlockingSaveStore()
    store.armed = False
    ex = DurableExecutor(nodes=[("twice", twice)], store=store)
    paused = await ex.run(None)
    store.armed = True
    resuming = asyncio.create_task(ex.resume(paused.thread_id, "a"))
    await asyncio.wait_for(store.entered.wait(), timeout=5)
    await asyncio.sleep(0.05)
    assert not resuming.done()
    store.release.set()
    result = await asyncio.wait_for(resuming, timeout=5)
    assert store.saved
    assert result.interrupted and result.interrupts[0].order == 1
    assert (await latest(store, paused.thread_id)).id == result.checkpoint_id


async def test_failing_save_propagates_and_nothing_is_interrupted() -> None:
    store = FailingSaveStore()
    ex = DurableExecutor(nodes=[("ask", asker(Calls()))], store=store)
    with pytest.raises(OSError, match="disk full"):
        await ex.run(1, thread_id="t-fail")
    assert store.refused, "the interrupted checkpoint was never attempted"
    saved = await store.list("t-fail")
    assert all(cp.status != "interrupted" for cp in saved)
    assert all(cp.interrupts == [] for cp in saved)


async def test_store_none_interrupt_raises_resume_error() -> None:
    ex = DurableExecutor(nodes=[("ask", asker(Calls()))], store=None)
    with pytest.raises(ResumeError, match="checkpoint store"):
        await ex.run(1)


async def test_interrupted_node_reruns_from_start_completed_nodes_do_not(
        store: CheckpointStore) -> None:
    calls = Calls()

    def prepare(x: int) -> int:
        calls.hit("prepare")
        return x + 1

    def finish(x: Any) -> Any:
        calls.hit("finish")
        return x

    ex = DurableExecutor(nodes=[("prepare", prepare), ("ask", asker(calls)),
                                ("finish", finish)], store=store)
    paused = await ex.run(1)
    assert (calls["prepare"], calls["ask"], calls["finish"]) == (1, 1, 0)
    done = await ex.resume(paused.thread_id, "yes")
    assert done.output == {"x": 2, "answer": "yes"}
    assert (calls["prepare"], calls["ask"], calls["finish"]) == (1, 2, 1)


async def test_rerun_gets_its_original_pending_input(store: CheckpointStore) -> None:
    inputs: list[Any] = []

    def ask(x: Any, ctx: NodeContext) -> Any:
        inputs.append(x)
        return ctx.interrupt("?")

    ex = DurableExecutor(nodes=[("make", lambda x: {"made": x}), ("ask", ask)], store=store)
    paused = await ex.run(5)
    cp = await latest(ex.store, paused.thread_id)
    assert cp.pending_input == {"made": 5}
    await ex.resume(paused.thread_id, "ok")
    assert inputs == [{"made": 5}, {"made": 5}]


async def test_several_interrupts_in_one_task_are_matched_by_order(store: CheckpointStore) -> None:
    calls = Calls()

    def form(x: Any, ctx: NodeContext) -> list[Any]:
        calls.hit("form")
        return [ctx.interrupt("name?"), ctx.interrupt("age?"), ctx.interrupt("city?")]

    ex = DurableExecutor(nodes=[("form", form)], store=store)
    result = await ex.run(None)
    first = result.interrupts[0]
    assert (first.payload, first.order) == ("name?", 0)
    result = await ex.resume(result.thread_id, "Ann")
    second = result.interrupts[0]
    assert (second.payload, second.order) == ("age?", 1)
    result = await ex.resume(result.thread_id, 41)
    third = result.interrupts[0]
    assert (third.payload, third.order) == ("city?", 2)
    assert len({first.id, second.id, third.id}) == 3
    assert first.task_id == second.task_id == third.task_id
    result = await ex.resume(result.thread_id, "Oslo")
    assert result.output == ["Ann", 41, "Oslo"]
    assert calls["form"] == 4


async def test_interrupt_fields(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("ask", asker(Calls()))], name="transfer", store=store)
    result = await ex.run({"amount": 1})
    (i,) = result.interrupts
    assert i.node == "ask"
    assert i.payload == {"q": {"amount": 1}}
    assert i.order == 0
    assert i.namespace == ["transfer"]
    assert i.run_id == result.run_id
    assert i.sub_agent_id is None
    assert i.checkpoint_id == result.checkpoint_id
    assert i.task_id and i.id


async def test_interrupt_ids_unique_per_task(store: CheckpointStore) -> None:
    """Two parallel tasks pausing at order 0 never share an id."""
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("?")

    ex = DurableExecutor(
        nodes=[("start", lambda x: x), ("a", ask), ("b", ask)],
        edges={"start": lambda _: ["a", "b"], "a": lambda _: None, "b": lambda _: None},
        store=store,
    )
    result = await ex.run(None)
    pending = pending_by_node(result)
    assert set(pending) == {"a", "b"}
    assert pending["a"].order == pending["b"].order == 0
    assert pending["a"].id != pending["b"].id
    assert pending["a"].task_id != pending["b"].task_id


async def test_interrupt_id_is_stable_across_reruns() -> None:
    """The save of a pause fails; recovering re-runs the node, which gets the same id."""
    store = FailingSaveStore()
    calls = Calls()
    ex = DurableExecutor(nodes=[("ask", asker(calls))], store=store)
    with pytest.raises(OSError):
        await ex.run(1, thread_id="t-stable")
    (lost,) = store.refused[0].interrupts
    result = await ex.recover("t-stable")
    assert calls["ask"] == 2
    (again,) = result.interrupts
    assert again.id == lost["id"]
    assert again.task_id == lost["task_id"]


async def test_answered_interrupt_keeps_its_id_when_the_node_pauses_again(
        store: CheckpointStore) -> None:
    def twice(x: Any, ctx: NodeContext) -> Any:
        return [ctx.interrupt("one"), ctx.interrupt("two")]

    ex = DurableExecutor(nodes=[("twice", twice)], store=store)
    paused = await ex.run(None)
    first = paused.interrupts[0]
    again = await ex.resume(paused.thread_id, "1")
    cp = await latest(ex.store, paused.thread_id)
    assert [r["id"] for r in cp.resolved] == [first.id]
    assert cp.resolved[0]["answer"] == "1"
    assert again.interrupts[0].id != first.id
    assert again.interrupts[0].order == 1


async def test_interrupt_ids_are_new_in_a_fork(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("ask", asker(Calls()))], store=store)
    original = await ex.run(1)
    fork = await ex.fork(original.thread_id)
    forked = await ex.get_state(fork)
    assert forked.interrupted
    assert forked.interrupts[0].id != original.interrupts[0].id
    assert forked.interrupts[0].payload == original.interrupts[0].payload


async def test_resume_command_and_bare_value_are_the_same(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("ask", asker(Calls()))], store=store)
    a = await ex.run(1)
    b = await ex.run(1)
    by_value = await ex.resume(a.thread_id, {"ok": 1})
    by_command = await ex.resume(b.thread_id, Command(resume={"ok": 1}))
    assert by_value.output == by_command.output == {"x": 1, "answer": {"ok": 1}}


async def test_interrupt_deadline_and_default_are_recorded(store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("late?", deadline_s=60, default="no")

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    result = await ex.run(None)
    (i,) = result.interrupts
    assert i.has_default and i.default == "no"
    assert i.deadline_at is not None and i.deadline_at - i.created_at == 60_000


async def test_interrupt_assignees_are_recorded_and_payload_keys_are_only_data(
        store: CheckpointStore) -> None:
    forwarded = {"deadline_s": 0, "default": {"approved": True},
                 "assignees": {"users": ["mallory"]}}

    def ask(x: Any, ctx: NodeContext) -> Any:
        first = ctx.interrupt(forwarded)
        return first, ctx.interrupt("who?", assignees={"groups": ["finance"]})

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    first = await ex.run(None)
    (plain,) = first.interrupts
    assert plain.payload == forwarded
    assert (plain.deadline_at, plain.has_default, plain.default, plain.assignees) == (
        None, False, None, None)
    (named,) = (await ex.resume(first.thread_id, 1)).interrupts
    assert named.assignees == {"users": [], "groups": ["finance"]}


async def test_interrupt_summary_fields_come_from_the_keyword_only(store: CheckpointStore) -> None:
    forwarded = {"question": "Pay?", "amount": 5, "summary_fields": ["amount"]}

    def ask(x: Any, ctx: NodeContext) -> Any:
        first = ctx.interrupt(forwarded)
        return first, ctx.interrupt({"amount": 5, "payee": "ACME"},
                                    summary=("payee", "amount", "payee"))

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    first = await ex.run(None)
    (plain,) = first.interrupts
    assert plain.summary_fields is None and plain.payload == forwarded
    (marked,) = (await ex.resume(first.thread_id, 1)).interrupts
    assert marked.summary_fields == ["payee", "amount"]


async def test_interrupt_sensitive_keys_come_from_the_keyword_only(store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt({"iban": "DE89", "sensitive": ["nothing"]},
                             sensitive=("iban", "card", "iban"))

    paused = await DurableExecutor(nodes=[("ask", ask)], store=store).run(None)
    (marked,) = paused.interrupts
    assert marked.sensitive == ["iban", "card"]
    assert marked.payload == {"iban": "DE89", "sensitive": ["nothing"]}  # kept whole


@pytest.mark.parametrize(("options", "named"), [
    ({"deadline_s": -1}, "deadline_s"), ({"deadline_s": "soon"}, "deadline_s"),
    ({"deadline_s": True}, "deadline_s"), ({"assignees": "bob"}, "assignees"),
    ({"assignees": {"users": "bob"}}, "assignees['users']"),
    ({"assignees": {"people": ["bob"]}}, "assignees"),
    ({"default": {1, 2}}, "set"), ({"summary": "amount"}, "summary"),
    ({"summary": ["amount", 3]}, "summary"), ({"summary": [f"k{n}" for n in range(9)]}, "summary"),
    ({"sensitive": "iban"}, "sensitive"), ({"sensitive": [1]}, "sensitive"),
])
async def test_bad_interrupt_options_fail_the_node_naming_them(
        options: dict[str, Any], named: str, store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("ok?", **options)

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(None)
    assert info.value.node == "ask" and named in str(info.value)


async def test_non_json_interrupt_payload_fails_the_node(store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt({"when": {1, 2}})

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(None)
    assert info.value.node == "ask"
    assert "set" in str(info.value)


@pytest.mark.parametrize("schema", [{"maxLength": "x"}, {"type": "nothing"}, "a string",
                                    {"$schema": ["x"]}])
async def test_a_malformed_answer_schema_fails_the_node_when_it_pauses(
        schema: Any, store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt({"question": "ok?", "answer_schema": schema})

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(None)
    assert info.value.node == "ask" and "answer_schema" in str(info.value)
