"""The ``*_sync`` twins on a store that lets the caller's thread block on it: lone sync
steps run right there, with no event loop; a loop starts only for work that needs one."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from runtime import (
    DurableExecutor,
    ForgeError,
    InMemoryCheckpointStore,
    Interrupt,
    NodeContext,
    ResumeError,
    ResumeTarget,
    StaleResumeTarget,
)
from tests.runtime.helpers import Calls
from tests.runtime.store_thread import STORE_THREAD, StoreThreadMemoryStore
from tests.runtime.test_store_thread import approval_graph, mixed_graph, two_approvals, where

T = TypeVar("T")


def history(store: Any, thread_id: str) -> list[tuple[str, str | None, int]]:
    return [(c.status, c.node, c.step) for c in asyncio.run(store.list(thread_id))]


def walk_sync(ex: DurableExecutor) -> str:
    result = ex.run_sync({"x": 1})
    while result.status == "interrupted":
        (pending,) = result.interrupts
        result = ex.resume_sync(result.thread_id, f"answer to {pending.node}")
    assert result.status == "completed"
    assert result.output == {"child": "answer to child_step"}
    return result.thread_id


def test_a_start_and_a_resume_run_on_the_callers_thread_with_every_step_saved() -> None:
    store, seen = StoreThreadMemoryStore(), []
    ex = approval_graph(store, seen)
    paused = ex.run_sync({"amount": 1})
    done = ex.resume_sync(paused.thread_id, "yes")
    assert (paused.status, done.status, done.output["answer"]) == (
        "interrupted", "completed", "yes")
    assert (store.trips, seen) == (0, [where()] * 4)
    assert history(store, paused.thread_id) == [
        ("running", None, 0), ("running", "prepare", 1), ("interrupted", "approve", 1),
        ("running", "approve", 1), ("running", "approve", 2), ("completed", "execute", 3)]


def test_work_that_needs_a_loop_goes_on_in_one_and_saves_what_the_async_way_saves() -> None:
    here, on_loop = Calls(), Calls()
    ex = mixed_graph(StoreThreadMemoryStore(), here)
    thread_id = walk_sync(ex)
    plain = mixed_graph(InMemoryCheckpointStore(), on_loop)

    async def walk_async() -> str:
        result = await plain.run({"x": 1})
        while result.status == "interrupted":
            (pending,) = result.interrupts
            result = await plain.resume(result.thread_id, f"answer to {pending.node}")
        return result.thread_id

    assert history(ex.store, thread_id) == history(plain.store, asyncio.run(walk_async()))
    assert here.counts == on_loop.counts
    threads = dict(here.log)
    assert threads["start"] == where()  # the first lone sync step: right here, no loop
    assert threads["join"] == where()  # a resume that starts with a lone sync step
    assert not threads["left"].startswith((STORE_THREAD, where()))  # parallel: workers
    assert threads["child"].startswith(STORE_THREAD)  # a sub-agent's, from the loop


def test_once_runs_once_and_is_saved_before_the_node_goes_on() -> None:
    store, calls = StoreThreadMemoryStore(), Calls()

    def pay(data: Any, ctx: NodeContext) -> Any:
        receipt = ctx.once("charge", lambda: calls.hit("charge") or "receipt-1")
        return {"receipt": receipt, "ok": ctx.interrupt("confirm?")}

    ex = DurableExecutor([("pay", pay)], store=store, name="pay")
    paused = ex.run_sync({}, thread_id="t")
    assert asyncio.run(store.load("t")).once == {"charge": "receipt-1"}  # type: ignore[union-attr]
    done = ex.resume_sync("t", True)
    assert (paused.status, done.output, calls["charge"], store.trips) == (
        "interrupted", {"receipt": "receipt-1", "ok": True}, 1, 0)


def paused_in_the_child(ex: DurableExecutor) -> Interrupt:
    """Walk the mixed graph with sync calls until its sub-agent asks."""
    result = ex.run_sync({"x": 1})
    while result.interrupts[0].node != "child_step":
        result = ex.resume_sync(result.thread_id, "go")
    (child,) = result.interrupts
    return child


def test_a_targeted_resume_answers_one_sub_agent() -> None:
    ex = mixed_graph(StoreThreadMemoryStore(), Calls())
    child = paused_in_the_child(ex)
    done = ex.resume_targeted_sync(ResumeTarget(child.run_id), "from the child")
    assert (done.status, done.output) == ("completed", {"child": "from the child"})
    with pytest.raises(StaleResumeTarget, match="is unknown"):
        ex.resume_targeted_sync(ResumeTarget("no-such-run"), "x")


def test_a_sub_agents_thread_given_to_resume_sync_is_answered_through_its_root() -> None:
    store = StoreThreadMemoryStore()
    ex = mixed_graph(store, Calls())
    child = store.load_run_sync(paused_in_the_child(ex).run_id)
    assert child is not None and child.parent_run_id is not None
    done = ex.resume_sync(child.thread_id, "via the child's thread")
    assert done.output == {"child": "via the child's thread"}


def test_starts_are_refused_here_as_they_are_in_the_loop() -> None:
    store = StoreThreadMemoryStore()
    ex = two_approvals(store)
    ex.run_sync({}, thread_id="t", run_id="r1")
    with pytest.raises(ResumeError, match="has a interrupted run"):
        ex.run_sync({}, thread_id="t")
    with pytest.raises(ResumeError, match="already taken"):
        ex.run_sync({}, run_id="r1")
    with pytest.raises(StaleResumeTarget, match="has no checkpoint"):
        ex.resume_sync("unknown", "yes")


def test_a_store_that_refuses_this_thread_keeps_the_trip_to_its_own() -> None:
    store, seen = StoreThreadMemoryStore(blocks_here=False), []
    ex = approval_graph(store, seen)
    done = ex.resume_sync(ex.run_sync({"amount": 1}).thread_id, "yes")
    assert (done.status, store.trips) == ("completed", 2)
    assert all(name.startswith(STORE_THREAD) for name in seen)


async def test_inside_an_event_loop_the_sync_twins_refuse_with_a_named_error() -> None:
    ex = approval_graph(StoreThreadMemoryStore(), [])
    with pytest.raises(ForgeError, match="await the async method"):
        ex.run_sync({"amount": 1})


def test_twenty_threads_resuming_one_interrupt_here_apply_one_answer() -> None:
    store, calls = StoreThreadMemoryStore(), Calls()

    def approve(data: Any, ctx: NodeContext) -> Any:
        answer = ctx.interrupt("approve?")
        ctx.once("effect", lambda: calls.hit("effect"))
        return answer

    ex = DurableExecutor([("approve", approve)], store=store, name="race")
    paused = ex.run_sync(None)
    barrier, outcomes = threading.Barrier(20), []

    def rival(n: int) -> None:
        barrier.wait()
        try:
            outcomes.append(ex.resume_sync(paused.thread_id, f"thread-{n}").output)
        except (ResumeError, StaleResumeTarget) as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=rival, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if isinstance(o, str) and o.startswith("thread-")]
    assert len(outcomes) == 20 and len(winners) == 1 and calls["effect"] == 1
    assert asyncio.run(store.load(paused.thread_id)).output == winners[0]  # type: ignore[union-attr]


class RunnerStore(StoreThreadMemoryStore):
    """A ``SyncRunner``: runs the sync twins' coroutines its own way, counting them."""

    def __init__(self, blocks_here: bool = True) -> None:
        super().__init__(blocks_here)
        self.runs: list[str] = []

    def run_from_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        self.runs.append(threading.current_thread().name)
        return asyncio.run(coro)


def test_a_store_that_says_how_sync_code_runs_a_loop_is_asked_each_time_one_is_needed(
) -> None:
    lone = RunnerStore()
    approval_graph(lone, []).run_sync({"amount": 1})
    assert lone.runs == []  # lone sync steps: no loop, nothing to ask
    mixed = RunnerStore()
    walk_sync(mixed_graph(mixed, Calls()))
    assert mixed.runs and set(mixed.runs) == {where()}
    refused = RunnerStore(blocks_here=False)  # every twin then runs its async method
    done = approval_graph(refused, []).run_sync({"amount": 1})
    assert done.status == "interrupted" and refused.runs == [where()]
