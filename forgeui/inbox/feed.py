"""What inbox sockets are told: event snapshots, catch-up, and a fallback poll.

A snapshot is an interrupt's state when its event is handled, rendered once per process
however many sockets hear about it (``SnapshotCache``). ``catch_up`` answers a client's
"what changed after event N" from the ``Event`` table. ``EventFeed`` finds events that
no channel-layer message announced here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.utils import timezone

from forgeui.inbox.audience import Audience
from forgeui.inbox.periodic import SocketLoopWork, of_loop
from forgeui.inbox.rows import MASKED, RowFacts, render_row, render_rows, row_mode
from forgeui.models import Event, Interrupt, InterruptStatus
from forgeui.team.assignment import Viewer

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

CATCH_UP_BATCH = 500  # events the fallback poll reads per query
CATCH_UP_LIMIT = 1000  # events one catch-up may replay; further behind, the page reloads


@dataclass
class Snapshot:
    """One interrupt as the inbox should show it now: a row (pending) or nothing."""

    event_id: int
    root_thread_id: str = ""
    interrupt_id: str = ""
    team: str | None = None  # whose object the event is about; None: not known
    interrupt: Interrupt | None = None  # set while pending
    rows: dict[str, str] = field(default_factory=dict)  # assignment mode (or MASKED) -> html
    # A run moved to a new checkpoint: its pending rows, to be replaced where shown.
    refreshed: list[tuple[Interrupt, dict[str, str]]] = field(default_factory=list)
    ended: Interrupt | None = None  # set once answered, for "Done by me" tabs
    facts: RowFacts | None = None  # what the rows were rendered with, for choosing one


def snapshot(event_id: int) -> Snapshot:
    """Read one event and its interrupt's current state; render its row both ways."""
    event = (Event.objects.filter(pk=event_id).with_team()
             .values("interrupt_id", "root_thread_id", "run_id", "team").first())
    if event is None:
        return Snapshot(event_id)
    found = Snapshot(event_id, event["root_thread_id"], event["interrupt_id"], event["team"])
    if found.interrupt_id:
        place(found, Interrupt.objects.select_related("run", "claimed_by")
              .filter(pk=found.interrupt_id).first())
    elif event["run_id"]:  # pending rows of a run that moved on show a new checkpoint id,
        # and its latest answered row where the run now stands (working, done)
        shown = list(Interrupt.objects.inbox().select_related("claimed_by")
                     .filter(run_id=event["run_id"]))
        last = (Interrupt.objects.select_related("run", "claimed_by")
                .filter(run_id=event["run_id"], status=InterruptStatus.ANSWERED)
                .order_by("-answered_at").first())
        if last is not None:
            shown.append(last)
        found.facts = RowFacts.of(shown)
        found.refreshed = [(i, render_rows(i, found.facts)) for i in shown]
    return found


def place(found: Snapshot, interrupt: Interrupt | None,
          viewer: tuple[Viewer, Audience] | None = None, facts: RowFacts | None = None,
          ) -> None:
    """Pending: the row to show; answered: the row for "Done by me". Rendered for
    ``viewer`` only, or for every kind of viewer when shared (``viewer=None``)."""
    if interrupt is None:
        return
    found.team = interrupt.team
    if interrupt.status == InterruptStatus.PENDING:
        found.interrupt = interrupt
    elif interrupt.status == InterruptStatus.ANSWERED and interrupt.answered_by_id:
        found.ended = interrupt
    else:
        return
    found.facts = facts or RowFacts.of([interrupt])
    if viewer is None:
        found.rows = render_rows(interrupt, found.facts)
    elif not viewer[1].sees_whole(interrupt.team):
        found.rows = {MASKED: render_row(interrupt, "read", found.facts, masked=True)}
    else:
        shown = row_mode(viewer[0], interrupt, found.facts) if found.interrupt else "read"
        found.rows = {shown: render_row(interrupt, shown, found.facts)}


def catch_up(after: int, viewer: Viewer, audience: Audience,
             limit: int | None = None) -> tuple[list[Snapshot], int] | None:
    """What changed after event ``after``: one snapshot per interrupt (or per run tree, for
    events about no interrupt), each with its interrupt's current state; the newest id.

    None when more than ``limit`` events came since: a client that far behind reloads its
    page instead, so no request reads more than one page of the event table. Only the
    events about what ``audience`` may read are read, and count.
    """
    limit = CATCH_UP_LIMIT if limit is None else limit
    batch = list(Event.objects.after(after).of_teams(audience.reads)
                 .values_list("id", "interrupt_id", "root_thread_id", "team")[:limit + 1])
    if len(batch) > limit:
        return None
    latest: dict[tuple[str, str], Snapshot] = {}
    for event_id, interrupt_id, root, team in batch:
        key = (interrupt_id, "" if interrupt_id else root)
        latest[key] = Snapshot(event_id, root, interrupt_id, team)
    pending = {s.interrupt_id: s for s in latest.values() if s.interrupt_id}
    found = list(Interrupt.objects.select_related("run", "claimed_by")
                 .filter(pk__in=list(pending)))
    facts = RowFacts.of(found)  # fork links and answers for every row at once
    for interrupt in found:
        place(pending[interrupt.pk], interrupt, (viewer, audience), facts)
    last = batch[-1][0] if batch else after
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


def settled_events(after: int, settle: float) -> list[tuple[int, str | None]]:
    """Ids (with their teams) of the events after ``after`` that are at least ``settle``
    seconds old (the channel layer had its chance to announce them), oldest first,
    stopping at the first that is not: ``created_at`` is taken before a writer waits for
    the ordering lock, so an event can be younger than one with a higher id, and the
    caller's floor must not pass it before it settles."""
    cutoff = timezone.now() - timedelta(seconds=settle)
    found = (Event.objects.after(after).with_team()
             .values_list("id", "created_at", "team")[:CATCH_UP_BATCH])
    settled: list[tuple[int, str | None]] = []
    for event_id, created_at, team in found:
        if created_at > cutoff:
            break
        settled.append((event_id, team))
    return settled


@dataclass
class Heard:
    """What one socket has been told: every event up to ``upto`` (a catch-up read them
    all), and ``ids`` above that, one by one."""

    upto: int = 0
    ids: set[int] = field(default_factory=set)

    def has(self, event_id: int) -> bool:
        return event_id <= self.upto or event_id in self.ids


class EventFeed(SocketLoopWork):
    """A fallback for events no channel-layer message brought to a socket.

    With the in-memory layer, a run started by another process (``manage.py start_run``
    beside daphne) writes its events to the database but cannot reach this process's
    sockets; the Redis layer drops a channel's oldest messages when its queue is full (a
    process's ``hub`` that fell behind). So what was heard is kept per socket. Each event
    loop polls the ``Event`` table every ``POLL_SECONDS`` and hands each socket the events
    it has not heard of, once they are ``SETTLE_SECONDS`` old. Pushing a row twice is
    harmless: rows are idempotent.
    """

    POLL_SECONDS = 0.5
    SETTLE_SECONDS = 0.5
    interval = POLL_SECONDS

    def __init__(self) -> None:
        super().__init__()
        self.heard: dict[Any, Heard] = {}
        self.floor: int | None = None

    def hear(self, consumer: Any, event_ids: list[int]) -> None:
        if consumer in self.sockets:  # not one that has gone meanwhile
            self.heard.setdefault(consumer, Heard()).ids.update(event_ids)

    def caught_up(self, consumer: Any, last: int) -> None:
        """``consumer`` was sent everything up to event ``last`` (``catch_up``)."""
        if consumer in self.sockets:
            heard = self.heard.setdefault(consumer, Heard())
            heard.upto = max(heard.upto, last)

    def discard(self, consumer: Any) -> None:
        super().discard(consumer)
        self.heard.pop(consumer, None)

    async def start(self) -> None:
        if self.floor is None:
            self.floor = await database_sync_to_async(Event.objects.last_id)()

    async def tick(self) -> None:
        assert self.floor is not None
        settled = await database_sync_to_async(settled_events)(self.floor,
                                                                self.SETTLE_SECONDS)
        if not settled:
            return
        self.floor = settled[-1][0]
        # One event at a time, every socket in turn: a whole batch per socket held the
        # database thread long enough for the sockets' own queues to overflow.
        for event_id, team in settled:
            await self.hand(event_id, team)
        for heard in self.heard.values():  # below the floor nothing is looked at again
            heard.ids = {i for i in heard.ids if i > self.floor}

    async def hand(self, event_id: int, team: str | None) -> None:
        """Hand one event to each socket that may read its team and has not heard it
        (another team's events never reach a team's sockets through their groups)."""
        for consumer in list(self.sockets):
            if (consumer.audience.may_read(team)
                    and not self.heard.setdefault(consumer, Heard()).has(event_id)):
                await consumer.inbox_event({"event_ids": [event_id]})


def feed() -> EventFeed:
    return of_loop(EventFeed)
