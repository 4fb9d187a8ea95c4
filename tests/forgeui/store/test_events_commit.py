"""Inbox events are part of the save that makes them: what is announced was committed.

A save writes the checkpoint, mirrors run and interrupt rows and writes the inbox event
rows in one transaction, and announces the events only after its commit. A failure right
after the event rows are written must leave nothing behind: no checkpoint, no event row,
no group message; so must a failing commit. (Were the events written after the save's
own commit, the checkpoint would be committed and the failure would lose its events; were
they announced before the commit, the inbox would hear of events that never were.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from channels.layers import get_channel_layer
from django.db import DatabaseError, connections

from forgeui.inbox import broadcast
from forgeui.inbox.broadcast import INBOX_GROUP
from forgeui.models import Checkpoint as CheckpointRow
from forgeui.models import Event, Interrupt
from forgeui.models import events as event_rows
from forgeui.store import DjangoCheckpointStore
from forgeui.store import checkpoints as store_module
from tests.runtime.store_conformance import chat_graph

pytestmark = pytest.mark.django_db(transaction=True)


class Injected(RuntimeError):
    """The failure this test injects."""


@pytest.fixture
def store(close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
    yield DjangoCheckpointStore()


async def listening(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A channel in the inbox group, served from this test's loop as daphne's would be."""
    monkeypatch.setattr(broadcast, "_server_loop", asyncio.get_running_loop())
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(INBOX_GROUP, channel)
    return layer, channel


async def heard(layer: Any, channel: str, wait: float = 1.0) -> list[int]:
    """The event ids of every group message the channel got within ``wait`` seconds."""
    found: list[int] = []
    while True:
        try:
            found += (await asyncio.wait_for(layer.receive(channel), wait))["event_ids"]
        except TimeoutError:
            return found


def fail_after_writing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Event rows get written, then the save fails before it can commit."""
    real = event_rows.write_events

    def written_then_failed(*args: Any, **kwargs: Any) -> list[int]:
        real(*args, **kwargs)
        raise Injected("the save fails after writing its events")

    for module in (event_rows, store_module):
        monkeypatch.setattr(module, "write_events", written_then_failed)


async def test_a_save_that_fails_after_writing_its_events_announces_nothing(
        store: DjangoCheckpointStore, monkeypatch: pytest.MonkeyPatch) -> None:
    layer, channel = await listening(monkeypatch)
    fail_after_writing(monkeypatch)
    with pytest.raises(Injected):
        await chat_graph(store).run({"messages": []})
    assert not await CheckpointRow.objects.aexists()
    assert not await Interrupt.objects.aexists()
    assert not await Event.objects.aexists()
    assert await heard(layer, channel) == []
    await layer.group_discard(INBOX_GROUP, channel)


def fail_the_next_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next commit on any connection fails, as a lost connection or a serialisation
    failure at COMMIT would: Django rolls the transaction back and raises."""
    wrapper = type(connections["default"])
    real = wrapper.commit
    armed = [True]

    def failing(self: Any) -> None:
        if armed and self.in_atomic_block is False and not self.get_autocommit():
            armed.clear()
            raise DatabaseError("injected: the commit fails")
        real(self)

    monkeypatch.setattr(wrapper, "commit", failing)


async def test_a_save_whose_commit_fails_announces_nothing(
        store: DjangoCheckpointStore, monkeypatch: pytest.MonkeyPatch) -> None:
    layer, channel = await listening(monkeypatch)
    fail_the_next_commit(monkeypatch)
    with pytest.raises(DatabaseError, match="injected"):
        await chat_graph(store).run({"messages": []})
    assert not await CheckpointRow.objects.aexists()
    assert not await Event.objects.aexists()
    assert await heard(layer, channel) == []
    await layer.group_discard(INBOX_GROUP, channel)


async def test_a_committed_save_is_announced_with_its_events(
        store: DjangoCheckpointStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same observation without the failure: the events and their message arrive."""
    layer, channel = await listening(monkeypatch)
    result = await chat_graph(store).run({"messages": []})
    assert await CheckpointRow.objects.filter(thread_id=result.thread_id).aexists()
    ids = [i async for i in Event.objects.values_list("id", flat=True)]
    assert ids and sorted(await heard(layer, channel)) == sorted(ids)
    await layer.group_discard(INBOX_GROUP, channel)
