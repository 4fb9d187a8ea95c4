"""The inbox's live half of the feed: committed event ids, sent on channel-layer groups.

Each process's ``hub`` receives ``{"type": "inbox.event", "group": G, "event_ids": [N, ...]}``
(ids in order: what one drain of the outbox found, often the events of one save) and hands
it to its sockets that read group G. ``INBOX_GROUP`` hears of
every event: its members may read every team's objects (plain roles, superusers). With
teams, each team has a group too (``team_group``), told only of its own objects' events;
a socket limited to some teams joins theirs. The event rows themselves are written by
``forgeui.models.events``, which calls ``broadcast`` after each commit once the app is
ready; a reconnecting client reads ``Event.objects.after(last_id)`` from the database.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Coroutine
from functools import partial
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

from forgeui.models import Event
from forgeui.permissions import teams

INBOX_GROUP = "inbox"
TEAM_GROUP_PREFIX = "inbox.team."
INBOX_MESSAGE_TYPE = "inbox.event"
# How long a process with no server waits for its announcement to reach the layer.
SEND_WAIT_S = 5.0

logger = logging.getLogger(__name__)


def broadcast(event_ids: list[int]) -> None:
    """Tell the inbox groups about these ids, in order, without waiting; a missing or
    broken channel layer only costs live updates (``feed.EventFeed`` polls the table)."""
    if event_ids:
        _outbox.send(event_ids)


def team_group(team: str) -> str:
    """The group told of ``team``'s events (team names are valid in group names)."""
    return TEAM_GROUP_PREFIX + team


def teams_of(event_ids: list[int]) -> list[tuple[int, str | None]]:
    """Each id with the team its event is about (None: no team's group hears it).

    Read in the writer's thread, just after its commit; without teams, nothing is read.
    A read that fails leaves the events to ``INBOX_GROUP`` and the teams' sockets to the
    fallback poll, which hands every socket what it missed.
    """
    if not teams.enabled():
        return [(event_id, None) for event_id in event_ids]
    try:
        found = dict(Event.objects.filter(pk__in=event_ids).with_team()
                     .values_list("id", "team"))
    except Exception:
        logger.exception("could not read the teams of inbox events %s", event_ids)
        found = {}
    return [(event_id, found.get(event_id) or None) for event_id in event_ids]


def messages_of(batch: list[tuple[int, str | None]]) -> list[tuple[str, list[int]]]:
    """(group, ids) to send for ``batch``: all ids to ``INBOX_GROUP``, each team's to its
    group; an event of no team reaches ``INBOX_GROUP`` only."""
    found: dict[str, list[int]] = {INBOX_GROUP: [event_id for event_id, _ in batch]}
    for event_id, team in batch:
        if team:
            found.setdefault(team_group(team), []).append(event_id)
    return list(found.items())


# The event loop serving websockets in this process (daphne has one), once a socket opened.
_server_loop: asyncio.AbstractEventLoop | None = None


def serve_from(loop: asyncio.AbstractEventLoop) -> None:
    """Called by the consumers: group messages from other threads go to this loop."""
    global _server_loop
    _server_loop = loop


def group_send(group: str, message: dict[str, Any]) -> bool:
    """Send from sync code in any thread without waiting; False (logged) when it cannot.

    The in-memory layer's queues belong to the server's loop, so while one is known the
    send runs there; otherwise a long-lived announcer loop sends it (the Redis layer keeps
    its connections per loop, so one loop for the process reuses them). A save never
    waits for the layer: ``async_to_sync`` here cost a thread start per message.
    """
    layer = get_channel_layer()
    if layer is None:
        return True
    try:
        started = _start(_sending_loop(), layer.group_send(group, message))
        started.add_done_callback(partial(_log_failure, message, group))
    except Exception:
        logger.exception("could not send %s to group %s", message.get("type"), group)
        return False
    return True


def _sending_loop() -> asyncio.AbstractEventLoop:
    """The server's loop while it runs (the in-memory layer's queues belong to it), else
    the announcer's."""
    loop = _server_loop
    return loop if loop is not None and loop.is_running() else _announcer.loop()


def _start(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` on ``loop`` from any thread, without waiting; its task or future."""
    if _runs_in(loop):
        return loop.create_task(coro)
    return asyncio.run_coroutine_threadsafe(coro, loop)


def _log_failure(message: dict[str, Any], group: str, future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.error("could not send %s to group %s: %r", message.get("type"), group,
                     future.exception())


class _Outbox:
    """Event ids waiting to be group-sent, drained in order by one task at a time.

    Waking another thread costs more than the send (a save's commit is about that
    long), so a save only appends its ids; the loop is woken once per batch, not per id.
    """

    def __init__(self) -> None:
        self._ids: deque[tuple[int, str | None]] = deque()
        self._lock = threading.Lock()
        self._draining: asyncio.AbstractEventLoop | None = None  # the loop draining
        self._drain_done: Any = None  # that drain's task or future

    def send(self, event_ids: list[int]) -> None:
        layer = get_channel_layer()
        if layer is None or _nobody_listens(layer):
            return
        loop = _sending_loop()
        found = teams_of(event_ids)
        with self._lock:
            self._ids.extend(found)
            # A running drain takes these ids too (a stopped loop's never will).
            if self._draining is None or not self._draining.is_running():
                self._draining = loop
                try:
                    self._drain_done = _start(loop, self._drain(layer))
                except Exception:
                    self._draining = self._drain_done = None
                    logger.exception("could not announce inbox events %s", event_ids)
                    return
            drain = self._drain_done
        if loop is not _server_loop and isinstance(drain, concurrent.futures.Future):
            # No server here: a worker's job or a command, whose process may end as soon
            # as it returns, unsent messages with it. Its sockets would hear of these
            # events only from the fallback poll, so wait for the send.
            concurrent.futures.wait([drain], timeout=SEND_WAIT_S)

    async def _drain(self, layer: Any) -> None:
        while True:
            with self._lock:
                if not self._ids:
                    self._draining = None
                    return
                batch = list(self._ids)
                self._ids.clear()
            # One message per group and batch: each socket sends one frame for all of it.
            for group, ids in messages_of(batch):
                try:
                    # The group is named: each process's hub hears several (``hub``).
                    await layer.group_send(group, {"type": INBOX_MESSAGE_TYPE,
                                                   "group": group, "event_ids": ids})
                except Exception:
                    logger.exception("could not announce inbox events %s to %s", ids, group)


_outbox = _Outbox()


def _nobody_listens(layer: Any) -> bool:
    """The in-memory layer reaches only this process's sockets: when none has joined an
    inbox group there is nobody to tell, and no thread need wake (the embedded default's
    runs would pay that on every save). A socket that joins later catches up from the
    ``Event`` table, after joining. Other layers reach other processes: always send."""
    if not isinstance(layer, InMemoryChannelLayer):
        return False
    return not any(members and (name == INBOX_GROUP or name.startswith(TEAM_GROUP_PREFIX))
                   for name, members in list(layer.groups.items()))


class _Announcer:
    """A daemon thread running one event loop for group messages sent from sync code."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="forge-announcer",
                                 daemon=True).start()
            return self._loop


_announcer = _Announcer()


def _runs_in(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
