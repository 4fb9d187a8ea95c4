"""The fallback poll and ids committed out of order.

An event id is taken at insert; a transaction that inserted a lower id may commit after
one with a higher id was read. Here the lower id's row is absent while the poll reads
past it (its transaction still open) and written afterwards with that id (the commit):
the next poll must still hand it to the socket.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from forgeui.inbox.feed import EventFeed
from forgeui.models import Event, EventKind

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


class Socket:
    """What the feed calls on an inbox consumer: ``inbox_event``; what it was handed."""

    def __init__(self) -> None:
        self.handed: list[int] = []

    async def inbox_event(self, message: dict[str, Any]) -> None:
        self.handed.extend(message["event_ids"])


def three_events_the_middle_one_uncommitted() -> tuple[list[int], dict[str, Any]]:
    settled = timezone.now() - timedelta(seconds=5)
    made = [Event.objects.create(kind=EventKind.INTERRUPT_CREATED, created_at=settled)
            for _ in range(3)]
    ids = [e.id for e in made]
    middle = made[1]
    row = {"id": middle.id, "kind": middle.kind, "created_at": middle.created_at}
    middle.delete()
    return ids, row


async def test_an_id_committed_after_a_higher_one_was_polled_still_reaches_the_socket() -> None:
    feed = EventFeed()
    feed.floor = await database_sync_to_async(Event.objects.last_id)()
    socket = Socket()
    feed.sockets.add(socket)  # not ``add``: the test runs the ticks itself
    (first, middle, last), row = await database_sync_to_async(
        three_events_the_middle_one_uncommitted)()

    await feed.tick()
    assert socket.handed == [first, last]

    await database_sync_to_async(Event.objects.create)(**row)  # its transaction commits
    await feed.tick()
    assert socket.handed == [first, last, middle]

    await feed.tick()  # handed once
    assert socket.handed == [first, last, middle]


async def test_a_socket_that_heard_a_late_id_is_not_handed_it_again() -> None:
    feed = EventFeed()
    feed.floor = await database_sync_to_async(Event.objects.last_id)()
    heard, missed = Socket(), Socket()
    feed.sockets.update({heard, missed})
    (first, middle, last), row = await database_sync_to_async(
        three_events_the_middle_one_uncommitted)()
    await feed.tick()
    await database_sync_to_async(Event.objects.create)(**row)
    feed.hear(heard, [middle])  # the channel layer brought it to this socket
    await feed.tick()
    assert heard.handed == [first, last]
    assert missed.handed == [first, last, middle]
