"""Side effects: ctx.once runs fn at most once per thread and key."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import CheckpointStore, DurableExecutor, ForgeError, NodeContext, NodeError

from .helpers import Calls, latest


def charging(store: CheckpointStore, calls: Calls) -> DurableExecutor:
    """A sync node charges a card (once), then asks; the re-run must not charge again."""
    def charge(x: Any, ctx: NodeContext) -> Any:
        receipt = ctx.once("charge", lambda: calls.hit("charge") or {"receipt": 17})
        return {"receipt": receipt, "ok": ctx.interrupt("confirm?")}

    return DurableExecutor(nodes=[("charge", charge)], store=store)


async def test_once_calls_fn_once_across_reruns(store: CheckpointStore) -> None:
    calls = Calls()
    ex = charging(store, calls)
    paused = await ex.run(None)
    assert calls["charge"] == 1
    done = await ex.resume(paused.thread_id, True)
    assert calls["charge"] == 1
    assert done.output == {"receipt": {"receipt": 17}, "ok": True}


async def test_once_result_is_recorded_in_the_checkpoint(store: CheckpointStore) -> None:
    calls = Calls()
    ex = charging(store, calls)
    paused = await ex.run(None)
    cp = await latest(ex.store, paused.thread_id)
    assert cp.once["charge"] == {"receipt": 17}


async def test_once_async_calls_fn_once_across_reruns(store: CheckpointStore) -> None:
    calls = Calls()

    async def side_effect() -> dict[str, int]:
        calls.hit("mail")
        return {"message_id": 5}

    async def mail(x: Any, ctx: NodeContext) -> Any:
        sent = await ctx.once_async("mail", side_effect)
        plain = await ctx.once_async("plain", lambda: calls.hit("plain") or "p")
        return [sent, plain, ctx.interrupt("sent?")]

    ex = DurableExecutor(nodes=[("mail", mail)], store=store)
    paused = await ex.run(None)
    done = await ex.resume(paused.thread_id, "yes")
    assert done.output == [{"message_id": 5}, "p", "yes"]
    assert (calls["mail"], calls["plain"]) == (1, 1)
    cp = await latest(ex.store, paused.thread_id)
    assert cp.once == {"mail": {"message_id": 5}, "plain": "p"}


async def test_once_is_per_thread(store: CheckpointStore) -> None:
    """Two threads each do the side effect once; a fork inherits the record."""
    calls = Calls()
    ex = charging(store, calls)
    a = await ex.run(None)
    await ex.run(None)
    assert calls["charge"] == 2
    fork = await ex.fork(a.thread_id)
    await ex.resume(fork, True)
    assert calls["charge"] == 2


async def test_once_record_survives_a_failed_node_and_recover(store: CheckpointStore) -> None:
    """The side effect is recorded before the node fails, so a retry does not repeat it."""
    calls = Calls()
    broken = {"on": True}

    def pay(x: Any, ctx: NodeContext) -> Any:
        receipt = ctx.once("pay", lambda: calls.hit("pay") or "r-1")
        if broken["on"]:
            raise RuntimeError("network dropped after paying")
        return receipt

    ex = DurableExecutor(nodes=[("pay", pay)], store=store)
    with pytest.raises(ForgeError):
        await ex.run(None, thread_id="t-pay")
    broken["on"] = False
    done = await ex.recover("t-pay")
    assert done.output == "r-1"
    assert calls["pay"] == 1


async def test_idempotency_key_is_stable_across_reruns(store: CheckpointStore) -> None:
    keys: list[str] = []

    def node(x: Any, ctx: NodeContext) -> Any:
        keys.append(ctx.idempotency_key("refund"))
        keys.append(ctx.idempotency_key("email"))
        return ctx.interrupt("?")

    ex = DurableExecutor(nodes=[("node", node)], store=store)
    a = await ex.run(None)
    await ex.resume(a.thread_id, 1)
    b = await ex.run(None)
    assert keys[0] == keys[2]  # same thread, node, task and name on the re-run
    assert keys[1] == keys[3]
    assert keys[0] != keys[1]  # another name
    assert keys[4] != keys[0]  # another thread
    assert a.thread_id in keys[0] and "node" in keys[0] and "refund" in keys[0]
    assert b.thread_id in keys[4]


async def test_sync_once_in_an_async_node_raises_forge_error(store: CheckpointStore) -> None:
    async def wrong(x: Any, ctx: NodeContext) -> Any:
        return ctx.once("k", lambda: 1)

    ex = DurableExecutor(nodes=[("wrong", wrong)], store=store)
    with pytest.raises(ForgeError, match="once_async"):
        await ex.run(None)


async def test_sync_once_in_an_async_node_does_not_call_fn(store: CheckpointStore) -> None:
    """Refusing after the side effect ran would let the fixed code repeat it."""
    calls = Calls()

    async def wrong(x: Any, ctx: NodeContext) -> Any:
        return ctx.once("k", lambda: calls.hit("effect") or 1)

    ex = DurableExecutor(nodes=[("wrong", wrong)], store=store)
    with pytest.raises(ForgeError):
        await ex.run(None)
    assert calls["effect"] == 0


async def test_once_result_must_be_json(store: CheckpointStore) -> None:
    def node(x: Any, ctx: NodeContext) -> Any:
        return ctx.once("k", lambda: object())

    ex = DurableExecutor(nodes=[("node", node)], store=store)
    with pytest.raises(ForgeError, match="object"):
        await ex.run(None)


@pytest.mark.parametrize("durability", ["sync", "exit"])
async def test_once_async_saves_its_result_before_it_returns(
        durability: str, store: CheckpointStore) -> None:
    """What the node sees right after ``await ctx.once_async`` is already in the store:
    a crash at that moment must not repeat the side effect."""
    seen: list[Any] = []

    async def send() -> dict[str, int]:
        return {"message_id": 9}

    async def mail(x: Any, ctx: NodeContext) -> Any:
        assert await ctx.once_async("mail", send) == {"message_id": 9}
        saved = await store.load(ctx.thread_id)
        seen.append(saved.once if saved is not None else None)
        raise RuntimeError("crashed right after sending")

    ex = DurableExecutor(nodes=[("mail", mail)], store=store,
                         durability=durability)  # type: ignore[arg-type]
    with pytest.raises(NodeError):
        await ex.run(None, thread_id="t-mail")
    assert seen == [{"mail": {"message_id": 9}}]
