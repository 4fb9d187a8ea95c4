"""The inbox websocket: pushes rendered rows as htmx out-of-band fragments.

``/ws/inbox/?graph=&sub_agent=&namespace=&sort=`` follows the inbox with those filters;
``/ws/inbox/?tree=<root_thread_id>`` only says "this run tree changed" to a run page.

Protocol: the server sends HTML (htmx's ws extension swaps it); the client sends one JSON
message, ``{"after": <last event id>}``, on every (re)connect, and the server replays what
changed after that id, read from the ``Event`` table, so a dropped connection loses
nothing. Rows are rendered from the interrupt's current state, never from the event, so
replays and out-of-order delivery end in the same page.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth import get_user_model
from django.utils import timezone

from . import access, events
from .events import INBOX_GROUP
from .inbox import InboxFilters, oob_cursor, oob_delete, oob_replace, oob_upsert, render_row
from .models import Event, Interrupt
from .roles import Action, allowed

logger = logging.getLogger(__name__)

CATCH_UP_BATCH = 500  # events read per query while catching up
ROWS_PER_FRAME = 200  # rows per websocket message while catching up


@dataclass
class Snapshot:
    """One interrupt as the inbox should show it now: a row (pending) or nothing."""

    event_id: int
    root_thread_id: str = ""
    interrupt_id: str = ""
    interrupt: Interrupt | None = None  # set while pending
    rows: dict[bool, str] = field(default_factory=dict)  # can_answer -> row html
    # A run moved to a new checkpoint: its pending rows, to be replaced where shown.
    refreshed: list[tuple[Interrupt, dict[bool, str]]] = field(default_factory=list)


def snapshot(event_id: int) -> Snapshot:
    """Read one event and its interrupt's current state; render its row both ways."""
    event = (Event.objects.filter(pk=event_id)
             .values("interrupt_id", "root_thread_id", "run_id").first())
    if event is None:
        return Snapshot(event_id)
    found = Snapshot(event_id, event["root_thread_id"], event["interrupt_id"])
    if found.interrupt_id:
        found.interrupt = Interrupt.objects.inbox().filter(pk=found.interrupt_id).first()
    elif event["run_id"]:  # pending rows of a run that moved on show a new checkpoint id
        found.refreshed = [(i, both_rows(i)) for i in Interrupt.objects.inbox()
                           .filter(run_id=event["run_id"])]
    if found.interrupt is not None:
        found.rows = both_rows(found.interrupt)
    return found


def both_rows(interrupt: Interrupt) -> dict[bool, str]:
    return {flag: render_row(interrupt, flag) for flag in (True, False)}


def catch_up(after: int, can_answer: bool) -> tuple[list[Snapshot], int]:
    """What changed after event ``after``: one snapshot per interrupt (or per run tree, for
    events about no interrupt), each with its interrupt's current state; the newest id."""
    latest: dict[tuple[str, str], Snapshot] = {}
    last = after
    while batch := list(Event.objects.after(last)
                        .values_list("id", "interrupt_id", "root_thread_id")[:CATCH_UP_BATCH]):
        for event_id, interrupt_id, root in batch:
            key = (interrupt_id, "" if interrupt_id else root)
            latest[key] = Snapshot(event_id, root, interrupt_id)
        last = batch[-1][0]
    pending = {s.interrupt_id: s for s in latest.values() if s.interrupt_id}
    for interrupt in Interrupt.objects.inbox().filter(pk__in=list(pending)):
        pending[interrupt.pk].interrupt = interrupt
        pending[interrupt.pk].rows = {can_answer: render_row(interrupt, can_answer)}
    return sorted(latest.values(), key=lambda s: s.event_id), last


class SnapshotCache:
    """Each event is read and rendered once per process, however many sockets hear it."""

    def __init__(self, size: int = 512, ttl: float = 5.0) -> None:
        self.size, self.ttl = size, ttl
        self.done: OrderedDict[int, tuple[float, Snapshot]] = OrderedDict()
        self.loading: dict[int, asyncio.Future[Snapshot]] = {}

    async def get(self, event_id: int) -> Snapshot:
        cached = self.done.get(event_id)
        if cached and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        if event_id not in self.loading:
            self.loading[event_id] = asyncio.ensure_future(self._load(event_id))
        return await asyncio.shield(self.loading[event_id])

    async def _load(self, event_id: int) -> Snapshot:
        try:
            found = await database_sync_to_async(snapshot)(event_id)
            self.done[event_id] = (time.monotonic(), found)
            while len(self.done) > self.size:
                self.done.popitem(last=False)
            return found
        finally:
            self.loading.pop(event_id, None)


snapshots = SnapshotCache()


def unheard_events(after: int, heard: set[int], settle: float) -> tuple[list[int], int]:
    """Events after ``after``, at least ``settle`` seconds old, that were not announced
    to us; and the newest such id, below which nothing is left to look at."""
    cutoff = timezone.now() - timedelta(seconds=settle)
    settled = list(Event.objects.after(after).filter(created_at__lte=cutoff)
                   .values_list("id", flat=True)[:CATCH_UP_BATCH])
    return [i for i in settled if i not in heard], max(settled, default=after)


class EventFeed:
    """A fallback for events no channel-layer message announced here.

    With the in-memory layer, a run started by another process (``manage.py start_run``
    beside daphne) writes its events to the database but cannot reach this process's
    sockets. Each event loop polls the ``Event`` table every ``POLL_SECONDS`` and hands
    events it has not heard of, once they are ``SETTLE_SECONDS`` old (the layer had its
    chance), to its sockets. Pushing a row twice is harmless: rows are idempotent.
    """

    POLL_SECONDS = 0.5
    SETTLE_SECONDS = 0.5

    def __init__(self) -> None:
        self.sockets: set[InboxConsumer] = set()
        self.heard: set[int] = set()
        self.floor: int | None = None
        self.task: asyncio.Task[None] | None = None

    def hear(self, event_id: int) -> None:
        self.heard.add(event_id)

    def add(self, consumer: InboxConsumer) -> None:
        self.sockets.add(consumer)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self.run())

    def discard(self, consumer: InboxConsumer) -> None:
        self.sockets.discard(consumer)
        if not self.sockets and self.task is not None:
            self.task.cancel()
            self.task = None

    async def run(self) -> None:
        if self.floor is None:
            self.floor = await database_sync_to_async(Event.objects.last_id)()
        while self.sockets:
            await asyncio.sleep(self.POLL_SECONDS)
            try:
                await self.poll()
            except Exception:
                logger.exception("polling inbox events failed")

    async def poll(self) -> None:
        assert self.floor is not None
        missed, self.floor = await database_sync_to_async(unheard_events)(
            self.floor, set(self.heard), self.SETTLE_SECONDS)
        self.heard = {i for i in self.heard if i > self.floor}
        for event_id in missed:
            for consumer in list(self.sockets):
                await consumer.inbox_event({"event_id": event_id})


_feeds: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EventFeed] = (
    weakref.WeakKeyDictionary()
)


def feed() -> EventFeed:
    loop = asyncio.get_running_loop()
    if loop not in _feeds:
        _feeds[loop] = EventFeed()
    return _feeds[loop]


@database_sync_to_async
def fresh_user(user_id: Any) -> Any:
    """The user as stored now (the scope's user caches its roles)."""
    return get_user_model().objects.get(pk=user_id)


@database_sync_to_async
def may_read(user: Any) -> tuple[bool, bool]:
    """(may watch the inbox, may answer from it), read fresh from the database."""
    return allowed(user, Action.READ), allowed(user, Action.ANSWER)


class InboxConsumer(AsyncJsonWebsocketConsumer):
    """One browser tab's inbox (or run page): filters, role and its catch-up cursor."""

    async def connect(self) -> None:
        events.serve_from(asyncio.get_running_loop())
        user = self.scope.get("user")
        session_key = getattr(self.scope.get("session"), "session_key", None)
        if user is None or not user.is_authenticated or not session_key:
            await self.close(code=access.SESSION_GONE)
            return
        may_watch, self.can_answer = await may_read(user)
        if not may_watch:
            await self.close(code=access.ROLE_LOST)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        self.tree = (query.get("tree") or [""])[-1]
        self.filters = InboxFilters.from_query(query)
        self.access_key = (user.pk, session_key)
        self.cursor = 0
        # websocket_disconnect leaves these groups for us.
        self.groups = [INBOX_GROUP, access.user_group(user.pk),
                       access.session_group(session_key)]
        for group in self.groups:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        access.watcher().add(self)
        feed().add(self)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "access_key"):
            access.watcher().discard(self)
            feed().discard(self)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        after = content.get("after") if isinstance(content, dict) else None
        if isinstance(after, int) and not isinstance(after, bool) and after >= 0:
            found, last = await database_sync_to_async(catch_up)(after, self.can_answer)
            await self.push(found, last)

    async def inbox_event(self, message: dict[str, Any]) -> None:
        """``events.publish`` announced a committed change (or ``EventFeed`` found one)."""
        feed().hear(int(message["event_id"]))
        found = await snapshots.get(int(message["event_id"]))
        await self.push([found], found.event_id)

    async def access_recheck(self, message: dict[str, Any]) -> None:
        """The user's groups or account changed: still allowed? Still may answer?"""
        code = await database_sync_to_async(access.access_code)(*self.access_key)
        if code is not None:
            await self.revoke(code)
            return
        _, self.can_answer = await may_read(await fresh_user(self.access_key[0]))

    async def access_revoked(self, message: dict[str, Any]) -> None:
        await self.revoke(access.SESSION_GONE)

    async def revoke(self, code: int) -> None:
        access.watcher().discard(self)
        feed().discard(self)
        await self.close(code=code)

    async def push(self, found: list[Snapshot], last: int) -> None:
        """Send the fragments for ``found``, in frames of at most ``ROWS_PER_FRAME`` rows."""
        parts = self.tree_parts(found) if self.tree else self.row_parts(found)
        if self.tree and not parts:
            return  # a run page hears only about its own tree
        self.cursor = max(self.cursor, last)
        cursor = oob_cursor(self.cursor, "tree-changed" if self.tree else "inbox-cursor")
        for start in range(0, max(len(parts), 1), ROWS_PER_FRAME):
            await self.send(text_data="".join(parts[start:start + ROWS_PER_FRAME]) + cursor)

    def row_parts(self, found: list[Snapshot]) -> list[str]:
        parts = []
        for item in found:
            if item.interrupt is None:
                if item.interrupt_id:  # answered, cancelled or gone: the row leaves
                    parts.append(oob_delete(item.interrupt_id))
            elif self.filters.matches(item.interrupt):
                parts.append(oob_upsert(item.rows[self.can_answer], item.interrupt_id,
                                        self.filters.insert_swap))
            parts.extend(oob_replace(rows[self.can_answer]) for interrupt, rows in item.refreshed
                         if self.filters.matches(interrupt))
        return parts

    def tree_parts(self, found: list[Snapshot]) -> list[str]:
        # The cursor element is the signal itself: its swap makes the page reload the tree.
        return [""] if any(item.root_thread_id == self.tree for item in found) else []
