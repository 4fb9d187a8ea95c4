"""The inbox groups joined once per process, their messages handed to its sockets here.

A channel layer delivers a group message once per member. With every socket a member,
a busy inbox cost the layer one message per socket per event (with Redis, a write and a
read each). Instead each event loop has a hub: one channel that joins every inbox group
(``broadcast``) that some socket of the loop reads, and hands each message it hears to
that group's sockets here. A socket keeps a channel of its own for its user's and its
session's groups (``access``), which carry a few messages per person, not per event.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

from forgeui.inbox.broadcast import INBOX_GROUP
from forgeui.inbox.frames import SERVER_ERROR

logger = logging.getLogger(__name__)


class Hub:
    """One event loop's membership in the inbox groups of one channel layer."""

    # A layer forgets memberships (Redis's group expiry, a restarted Redis): joined again
    # this often, and after the layer failed a receive.
    REJOIN_S = 3600.0
    RETRY_S = 1.0

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.members: dict[str, set[Any]] = {}
        self.channel: str | None = None
        self.task: asyncio.Task[None] | None = None

    async def join(self, consumer: Any, groups: list[str]) -> None:
        """Hand ``consumer`` these groups' messages; a group new to this loop is joined in
        the layer first, and a failure to join leaves ``consumer`` out of it."""
        if self.channel is None:
            channel = await self.layer.new_channel()
            self.channel = self.channel or channel  # another join may have won the await
        for group in groups:
            members = self.members.setdefault(group, set())
            first = not members
            members.add(consumer)  # before the await: a leave meanwhile keeps the group
            if first:
                try:
                    await self.layer.group_add(group, self.channel)
                except BaseException:
                    self.leave(consumer, [group])
                    raise
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self.run())

    def leave(self, consumer: Any, groups: list[str] | None = None) -> list[str]:
        """Stop handing ``consumer`` these groups' messages (all, by default); the groups
        with no member left here, for ``forget`` to leave in the layer."""
        emptied = []
        for group in list(self.members) if groups is None else groups:
            members = self.members.get(group)
            if members is None or consumer not in members:
                continue
            members.discard(consumer)
            if not members:
                del self.members[group]
                emptied.append(group)
        if not self.members and self.task is not None:
            self.task.cancel()
            self.task = None
        return emptied

    async def forget(self, groups: list[str]) -> None:
        """Leave those of ``groups`` that still have no member here."""
        for group in groups:
            if self.channel is not None and not self.members.get(group):
                try:
                    await self.layer.group_discard(group, self.channel)
                except Exception:  # the layer expires it
                    logger.warning("inbox hub could not leave group %s", group, exc_info=True)

    def forget_soon(self, groups: list[str]) -> None:
        """``forget``, from code that cannot wait (a socket's release)."""
        if groups:
            task = asyncio.get_running_loop().create_task(self.forget(groups))
            _pending.add(task)
            task.add_done_callback(_pending.discard)

    async def run(self) -> None:
        """Hear the groups' messages and hand them on, while any socket is here."""
        rejoin = asyncio.create_task(self.keep_joined())
        try:
            while self.members:
                try:
                    message = await self.layer.receive(self.channel)
                except asyncio.CancelledError:
                    raise
                except Exception:  # Redis went away: join again once it is back
                    logger.warning("inbox hub lost its channel layer; joining again",
                                   exc_info=True)
                    await asyncio.sleep(self.RETRY_S)
                    await self.rejoin()
                    continue
                await self.hand(message)
        finally:
            rejoin.cancel()

    async def hand(self, message: dict[str, Any]) -> None:
        """Hand one group message to each socket of its group, in turn."""
        # A message naming no group comes from a process of an older release (a deploy
        # under way), which sent only the all-teams group's.
        for consumer in list(self.members.get(message.get("group") or INBOX_GROUP, ())):
            try:
                await consumer.inbox_event(message)
            except Exception:
                # As when a socket's own handler fails: it closes and leaves its groups.
                logger.exception("inbox socket failed handling %s", message.get("type"))
                try:
                    await consumer.revoke(SERVER_ERROR)
                except Exception:  # one socket that cannot even close stops no other
                    logger.warning("inbox socket could not be closed", exc_info=True)

    async def keep_joined(self) -> None:
        while True:
            await asyncio.sleep(self.REJOIN_S)
            await self.rejoin()

    async def rejoin(self) -> None:
        for group in list(self.members):
            try:
                await self.layer.group_add(group, self.channel)
            except Exception:
                logger.warning("inbox hub could not join group %s", group, exc_info=True)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, Hub]] = (
    weakref.WeakKeyDictionary()
)
_pending: set[asyncio.Task[None]] = set()


def hub_of(layer: Any) -> Hub:
    """The running event loop's hub for ``layer`` (each test has its loop and may swap
    layers; daphne has one of each)."""
    per_loop = _hubs.setdefault(asyncio.get_running_loop(), {})
    found = per_loop.get(id(layer))
    if found is None or found.layer is not layer:
        found = per_loop[id(layer)] = Hub(layer)
    return found
