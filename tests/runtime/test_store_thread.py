"""Lone sync steps on a ``BlockingStore``'s thread: same checkpoints, fewer trips."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from runtime import (
    END,
    DurableExecutor,
    InMemoryCheckpointStore,
    NodeContext,
    NodeError,
)
from tests.runtime.helpers import Calls, checkpoints
from tests.runtime.store_thread import STORE_THREAD, StoreThreadMemoryStore


def where() -> str:
    return threading.current_thread().name


def approval_graph(store: Any, seen: list[str]) -> DurableExecutor:
    """The benchmark's graph: prepare -> approve (interrupt) -> execute."""
    def prepare(data: dict[str, Any]) -> dict[str, Any]:
        seen.append(where())
        return {**data, "prepared": True}

    def approve(data: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        seen.append(where())
        return {**data, "answer": ctx.interrupt({"question": "Approve?"})}

    def execute(data: dict[str, Any]) -> dict[str, Any]:
        seen.append(where())
        return {**data, "done": True}

    return DurableExecutor([("prepare", prepare), ("approve", approve), ("execute", execute)],
                           store=store, name="approval")


async def test_a_start_and_a_resume_take_one_trip_each_and_save_every_step() -> None:
    store, seen = StoreThreadMemoryStore(), []
    ex = approval_graph(store, seen)
    paused = await ex.run({"amount": 1})
    assert (paused.status, store.trips) == ("interrupted", 1)
    done = await ex.resume(paused.thread_id, "yes")
    assert (done.status, done.output["answer"], store.trips) == ("completed", "yes", 2)
    assert all(name.startswith(STORE_THREAD) for name in seen) and len(seen) == 4
    saved = await checkpoints(store, paused.thread_id)
    assert [(c.status, c.step) for c in saved] == [
        ("running", 0), ("running", 1), ("interrupted", 1), ("running", 1), ("running", 2),
        ("completed", 3)]


def mixed_graph(store: Any, calls: Calls) -> DurableExecutor:
    """Lone sync steps around an async node, a parallel step, a sub-agent, breakpoints."""
    def child_step(data: Any, ctx: NodeContext) -> Any:
        calls.hit("child", where())
        return {"child": ctx.interrupt("child asks")}

    child = DurableExecutor([("child_step", child_step)], store=store, name="child")

    def start(data: Any) -> Any:
        calls.hit("start", where())
        return data

    async def think(data: Any) -> Any:
        calls.hit("think", where())
        return data

    def left(data: Any) -> Any:
        calls.hit("left", where())
        return "L"

    def right(data: Any) -> Any:
        calls.hit("right", where())
        return "R"

    def join(data: Any) -> Any:
        calls.hit("join", where())
        return sorted(data.values())

    return DurableExecutor(
        [("start", start), ("think", think), ("left", left), ("right", right),
         ("join", join), ("child", child), ("end", lambda data: data)],
        edges={"start": lambda _: "think", "think": lambda _: ["left", "right"],
               "left": lambda _: "join", "right": lambda _: "join",
               "join": lambda _: "child", "child": lambda _: "end", "end": lambda _: END},
        store=store, interrupt_before=["join"], interrupt_after=["start"], name="mixed")


async def walk(ex: DurableExecutor) -> list[tuple[str, str | None, int]]:
    result = await ex.run({"x": 1})
    while result.status == "interrupted":
        (pending,) = result.interrupts
        result = await ex.resume(result.thread_id, f"answer to {pending.node}")
    assert result.status == "completed"
    assert result.output == {"child": "answer to child_step"}
    return [(c.status, c.node, c.step) for c in await checkpoints(ex.store, result.thread_id)]


async def test_both_ways_save_the_same_checkpoints_and_only_lone_sync_nodes_move() -> None:
    on_loop, on_store = Calls(), Calls()
    plain = await walk(mixed_graph(InMemoryCheckpointStore(), on_loop))
    threaded = await walk(mixed_graph(StoreThreadMemoryStore(), on_store))
    assert threaded == plain
    assert on_store.counts == on_loop.counts
    threads = dict(on_store.log)
    assert threads["start"].startswith(STORE_THREAD) and threads["join"].startswith(STORE_THREAD)
    assert threads["child"].startswith(STORE_THREAD)  # a sub-agent's lone sync step too
    assert threads["think"] == where()  # async: on the loop
    assert not threads["left"].startswith(STORE_THREAD)  # parallel: worker threads
    assert not threads["right"].startswith(STORE_THREAD)


async def test_once_on_the_store_thread_is_saved_before_it_returns() -> None:
    store, calls = StoreThreadMemoryStore(), Calls()
    fail = [True]

    def pay(data: Any, ctx: NodeContext) -> Any:
        receipt = ctx.once("charge", lambda: calls.hit("charge") or "receipt-1")
        if fail[0]:
            raise RuntimeError("crashed after charging")
        return receipt

    ex = DurableExecutor([("pay", pay)], store=store, name="pay")
    with pytest.raises(NodeError, match="crashed after charging"):
        await ex.run({}, thread_id="t")
    saved = await checkpoints(store, "t")
    assert [c.status for c in saved] == ["running", "running", "failed"]
    assert saved[1].once == {"charge": "receipt-1"}
    fail[0] = False
    result = await ex.recover("t")
    assert (result.status, result.output, calls["charge"]) == ("completed", "receipt-1", 1)


async def test_a_failing_route_on_the_store_thread_fails_the_run_with_its_node() -> None:
    store = StoreThreadMemoryStore()

    def broken(_: Any) -> str:
        raise KeyError("nowhere")

    ex = DurableExecutor([("a", lambda d: d), ("b", lambda d: d)], edges={"a": broken},
                         store=store, name="routes")
    with pytest.raises(NodeError, match="route failed") as failed:
        await ex.run({}, thread_id="r")
    assert failed.value.node == "a"
    assert [c.status for c in await checkpoints(store, "r")] == ["running", "failed"]


def two_approvals(store: Any) -> DurableExecutor:
    def ask(name: str) -> Any:
        return lambda data, ctx: {**data, name: ctx.interrupt(f"{name}?")}

    return DurableExecutor([("first", ask("first")), ("second", ask("second"))],
                           store=store, name="two")


async def test_a_request_left_to_the_lease_holder_is_reported_once_saved() -> None:
    """A cancel that arrives while a node runs is recorded for the lease holder, which
    applies it when the node returns."""
    store = StoreThreadMemoryStore()
    entered, release = threading.Event(), threading.Event()

    def slow(data: Any) -> Any:
        entered.set()
        assert release.wait(5)
        return data

    ex = DurableExecutor([("slow", slow), ("after", lambda data: data)], store=store,
                         name="slow")
    finished: list[Any] = []
    worker = threading.Thread(target=lambda: finished.append(ex.run_sync(1, thread_id="t")))
    worker.start()
    assert await asyncio.to_thread(entered.wait, 5)
    try:
        reported = await ex.cancel("t")
        assert reported.status == "running"
    finally:
        release.set()
        await asyncio.to_thread(worker.join, 5)
    assert [r.status for r in finished] == ["cancelled"]
