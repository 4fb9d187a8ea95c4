"""The inbox hub: one membership per event loop in each inbox group, on the real Redis
layer and the in-memory one; what it hears reaches each socket of the group once, and
a membership the layer lost is taken again."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis
from channels.layers import InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer

from forgeui.inbox.broadcast import INBOX_GROUP, INBOX_MESSAGE_TYPE, team_group
from forgeui.inbox.frames import SERVER_ERROR
from forgeui.inbox.hub import Hub

REDIS_URL = "redis://127.0.0.1:6379/0"
FINANCE = team_group("finance")


class Socket:
    """What the hub needs of an inbox consumer: what it was handed, how it was closed."""

    def __init__(self, fails: bool = False) -> None:
        self.heard: list[list[int]] = []
        self.revoked: list[int] = []
        self.fails = fails

    async def inbox_event(self, message: dict[str, Any]) -> None:
        if self.fails:
            raise RuntimeError("injected: the handler fails")
        self.heard.append(message["event_ids"])

    async def revoke(self, code: int) -> None:
        self.revoked.append(code)


class Unclosable(Socket):
    """A socket that fails and cannot even be closed (daphne refuses a close it cannot send)."""

    async def revoke(self, code: int) -> None:
        self.revoked.append(code)
        raise ValueError("injected: the socket cannot be closed")


async def until(check: Any, seconds: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def members_in_redis(layer: Any, group: str) -> int:
    """The group's members as Redis holds them (the layer keeps a sorted set per group)."""
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        return int(await client.zcard(f"{layer.prefix}:group:{group}"))
    finally:
        await client.aclose()


def announce(group: str, *ids: int) -> dict[str, Any]:
    return {"type": INBOX_MESSAGE_TYPE, "group": group, "event_ids": list(ids)}


@pytest.fixture
async def redis_layer() -> Any:
    layer = RedisChannelLayer(hosts=[REDIS_URL], prefix=f"forge-hub-{uuid.uuid4().hex[:8]}")
    yield layer
    await layer.flush()
    await layer.close_pools()


@pytest.mark.redis
async def test_redis_holds_one_member_per_group_and_each_socket_hears_its_groups(
        redis_layer: Any) -> None:
    hub = Hub(redis_layer)
    everything, another, finance = Socket(), Socket(), Socket()
    await hub.join(everything, [INBOX_GROUP])
    await hub.join(another, [INBOX_GROUP])
    await hub.join(finance, [FINANCE])
    for group in (INBOX_GROUP, FINANCE):
        assert await members_in_redis(redis_layer, group) == 1
    await redis_layer.group_send(INBOX_GROUP, announce(INBOX_GROUP, 1, 2))
    await redis_layer.group_send(FINANCE, announce(FINANCE, 2))
    await until(lambda: everything.heard and another.heard and finance.heard)
    await asyncio.sleep(0.2)  # nothing more arrives
    assert everything.heard == another.heard == [[1, 2]]
    assert finance.heard == [[2]]
    await hub.forget(hub.leave(finance))
    await hub.forget(hub.leave(everything))
    assert await members_in_redis(redis_layer, FINANCE) == 0
    assert await members_in_redis(redis_layer, INBOX_GROUP) == 1  # another's
    await hub.forget(hub.leave(another))
    assert hub.task is None


@pytest.mark.redis
async def test_a_membership_redis_forgot_is_taken_again(
        redis_layer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis expires group members, and a restarted one keeps none: the hub joins again."""
    monkeypatch.setattr(Hub, "REJOIN_S", 0.2)
    hub, socket = Hub(redis_layer), Socket()
    await hub.join(socket, [INBOX_GROUP])
    client = aioredis.Redis.from_url(REDIS_URL)
    await client.delete(f"{redis_layer.prefix}:group:{INBOX_GROUP}")
    await client.aclose()
    await asyncio.sleep(0.5)
    await redis_layer.group_send(INBOX_GROUP, announce(INBOX_GROUP, 7))
    await until(lambda: socket.heard)
    assert socket.heard == [[7]]
    hub.leave(socket)


async def test_a_failed_receive_is_followed_by_joining_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    layer = InMemoryChannelLayer()
    monkeypatch.setattr(Hub, "RETRY_S", 0.05)
    receive, failed = layer.receive, []

    async def once_broken(channel: str) -> Any:
        if not failed:
            failed.append(channel)
            layer.groups.clear()  # as a restarted Redis: no memberships left
            raise ConnectionError("injected: the layer went away")
        return await receive(channel)

    monkeypatch.setattr(layer, "receive", once_broken)
    hub, socket = Hub(layer), Socket()
    await hub.join(socket, [INBOX_GROUP])
    await until(lambda: failed and hub.channel in layer.groups.get(INBOX_GROUP, {}))
    await layer.group_send(INBOX_GROUP, announce(INBOX_GROUP, 3))
    await until(lambda: socket.heard)
    assert socket.heard == [[3]]
    hub.leave(socket)


@pytest.mark.parametrize("closes", [True, False], ids=["closed", "cannot close"])
async def test_a_socket_whose_handler_fails_is_closed_and_the_others_still_hear(
        closes: bool) -> None:
    layer = InMemoryChannelLayer()
    hub = Hub(layer)
    broken, fine = (Socket if closes else Unclosable)(fails=True), Socket()
    await hub.join(broken, [INBOX_GROUP])
    await hub.join(fine, [INBOX_GROUP])
    await layer.group_send(INBOX_GROUP, announce(INBOX_GROUP, 5))
    await until(lambda: fine.heard)
    hub.leave(broken)
    await layer.group_send(INBOX_GROUP, announce(INBOX_GROUP, 6))  # the hub still hears
    await until(lambda: len(fine.heard) == 2)
    assert broken.revoked == [SERVER_ERROR] and 4000 <= SERVER_ERROR <= 4999  # daphne's range
    assert fine.heard == [[5], [6]] and not fine.revoked
    hub.leave(fine)


async def test_a_group_the_layer_refuses_leaves_the_socket_out() -> None:
    layer = InMemoryChannelLayer()
    hub, socket = Hub(layer), Socket()

    async def refused(group: str, channel: str) -> None:
        raise ConnectionError("injected: the layer is down")

    layer.group_add = refused  # type: ignore[method-assign]
    with pytest.raises(ConnectionError, match="injected"):
        await hub.join(socket, [INBOX_GROUP])
    assert hub.members == {} and hub.task is None

