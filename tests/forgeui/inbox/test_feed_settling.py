"""The fallback poll and an event younger than one with a higher id.

Ids become visible in id order, but an event's ``created_at`` is taken before its writer
waits for the ordering lock, so under contention a lower id can be younger than a higher
one. The poll hands over settled events only (older than ``SETTLE_SECONDS``) after its
floor; the younger one must still reach the socket once it settles.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from forgeui.inbox.audience import Audience
from forgeui.inbox.feed import EventFeed
from forgeui.models import Event, EventKind, Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

SETTLE_S = 0.2
EVERY_TEAM = Audience(None, None)


class Socket:
    """What the feed reads and calls on an inbox consumer: ``audience`` and
    ``inbox_event``; what it was handed."""

    def __init__(self, audience: Audience = EVERY_TEAM) -> None:
        self.handed: list[int] = []
        self.audience = audience

    async def inbox_event(self, message: dict[str, Any]) -> None:
        self.handed.extend(message["event_ids"])


def three_events_the_middle_one_young() -> list[int]:
    """Three events in id order; the middle one made just now (its writer waited for the
    ordering lock longest), the others seconds ago."""
    now = timezone.now()
    ages = [timedelta(seconds=5), timedelta(0), timedelta(seconds=5)]
    return [Event.objects.create(kind=EventKind.INTERRUPT_CREATED, created_at=now - age).id
            for age in ages]


async def fed(*sockets: Socket) -> EventFeed:
    feed = EventFeed()
    feed.SETTLE_SECONDS = SETTLE_S
    feed.floor = await database_sync_to_async(Event.objects.last_id)()
    feed.sockets.update(sockets)  # not ``add``: the test runs the ticks itself
    return feed


async def test_an_event_younger_than_a_higher_id_still_reaches_the_socket() -> None:
    socket = Socket()
    feed = await fed(socket)
    first, middle, last = await database_sync_to_async(three_events_the_middle_one_young)()

    await feed.tick()
    assert socket.handed == [first]  # not past the young one
    await asyncio.sleep(SETTLE_S * 2)
    await feed.tick()
    assert socket.handed == [first, middle, last]
    await feed.tick()  # handed once
    assert socket.handed == [first, middle, last]


async def test_a_socket_that_heard_the_young_event_is_not_handed_it_again() -> None:
    heard, missed = Socket(), Socket()
    feed = await fed(heard, missed)
    first, middle, last = await database_sync_to_async(three_events_the_middle_one_young)()
    await feed.tick()
    feed.hear(heard, [middle])  # the channel layer brought it to this socket
    await asyncio.sleep(SETTLE_S * 2)
    await feed.tick()
    assert heard.handed == [first, last]
    assert missed.handed == [first, middle, last]


async def test_a_teams_socket_is_handed_only_events_about_what_it_reads() -> None:
    finance, everyone = Socket(Audience(frozenset({"finance"}), frozenset())), Socket()
    feed = await fed(finance, everyone)
    ids = await database_sync_to_async(events_of_teams)(["finance", "support", ""])
    await asyncio.sleep(SETTLE_S * 2)
    await feed.tick()
    assert finance.handed == ids[:1]
    assert everyone.handed == ids


def events_of_teams(teams: list[str]) -> list[int]:
    """An event about a run of each of ``teams`` (settled already)."""
    made = []
    for team in teams:
        run_id = f"run-{team or 'none'}"
        Run.objects.create(run_id=run_id, thread_id=run_id, root_thread_id=run_id,
                           team=team, status="running", latest_checkpoint_id="c")
        made.append(Event.objects.create(kind=EventKind.RUN_UPDATED, run_id=run_id,
                                         root_thread_id=run_id).id)
    return made
