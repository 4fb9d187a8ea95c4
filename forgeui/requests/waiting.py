"""Long polls that hold no thread and no database connection while they wait.

One listener per process joins the inbox's channel-layer group, where every committed
change is announced as event ids. When requests are being waited for, it looks the ids up
once (one query per batch, whoever waits) and wakes the waiters of the requests those
events touched; each waiter then reads its request again. A waiter that hears nothing
(a broken layer) reads it again at its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from forgeui.inbox import broadcast
from forgeui.models import Event

logger = logging.getLogger(__name__)
REJOIN_S = 3600.0  # group membership expires on the Redis layer; join again well before


class Waiters:
    """The requests this process's long polls wait for, and the listener that wakes them."""

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def watching(self, request_id: str) -> AsyncIterator[asyncio.Event]:
        """An event set when ``request_id`` may have changed; watch before reading it, so
        a change between the read and the wait is not missed."""
        self._ensure_listener()
        event = asyncio.Event()
        self._waiting.setdefault(request_id, set()).add(event)
        try:
            yield event
        finally:
            found = self._waiting.get(request_id)
            if found is not None:
                found.discard(event)
                if not found:
                    del self._waiting[request_id]

    async def until_ended(self, request_id: str, read: Callable[[], Awaitable[dict[str, Any]]],
                          seconds: float | None = None, recheck: float | None = None,
                          ) -> dict[str, Any]:
        """``read()``'s view of the request once it is no longer pending, or once
        ``seconds`` have passed (None: no limit). It is read again at each change
        announced for it (a claim or an assignment ends nothing, so the wait goes on) and
        every ``recheck`` seconds, in case an announcement never came."""
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        async with self.watching(request_id) as changed:
            found = await read()  # after watching starts: a change in between wakes us
            while found["status"] == "pending":
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    break
                limits = [t for t in (left, recheck) if t is not None]
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(limits) if limits else None):
                        await changed.wait()
                changed.clear()  # before the read: a change during it wakes us again
                found = await read()
        return found

    def count(self) -> int:
        return sum(len(events) for events in self._waiting.values())

    def wake(self, request_ids: set[str]) -> None:
        for request_id in request_ids:
            for event in self._waiting.get(request_id, ()):
                event.set()

    def _ensure_listener(self) -> None:
        if self._listener is None or self._listener.done():
            # A context of its own: the request that happens to start it must not lend it
            # its thread-sensitive executor, which ends with that request.
            self._listener = asyncio.get_running_loop().create_task(
                self._listen(), context=contextvars.Context())

    async def _listen(self) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        broadcast.serve_from(asyncio.get_running_loop())  # the in-memory layer's sends
        channel = await layer.new_channel()
        while True:
            await layer.group_add(broadcast.INBOX_GROUP, channel)
            try:
                async with asyncio.timeout(REJOIN_S):
                    while True:
                        message = await layer.receive(channel)
                        await self._heard(message.get("event_ids") or [])
            except TimeoutError:
                continue

    async def _heard(self, event_ids: list[int]) -> None:
        if not self._waiting or not event_ids:
            return
        try:
            touched = await _threads_of(event_ids, list(self._waiting))
        except Exception:  # the waiters still read their request at their timeout
            logger.exception("could not read events %s", event_ids[:5])
            return
        self.wake(touched)


@database_sync_to_async
def _threads_of(event_ids: list[int], request_ids: list[str]) -> set[str]:
    return set(Event.objects.filter(id__in=event_ids, root_thread_id__in=request_ids)
               .values_list("root_thread_id", flat=True))


waiters = Waiters()
