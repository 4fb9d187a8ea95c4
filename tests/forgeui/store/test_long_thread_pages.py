"""A long thread's timeline and checkpoint list come a page at a time, and each page says
what the whole list would have said at those positions."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.runs import timeline
from forgeui.store import DjangoCheckpointStore
from tests.runtime.store_conformance import chat_graph

pytestmark = pytest.mark.django_db(transaction=True)
TURNS = 40
TOTAL = 2 + 3 * TURNS  # the start saves twice, each turn three times: three pages


@pytest.fixture
def long_thread() -> str:
    executor = chat_graph(DjangoCheckpointStore())
    result = executor.run_sync({"messages": []})
    for turn in range(TURNS):
        result = executor.resume_sync(result.thread_id, f"turn {turn}")
    return result.thread_id


@pytest.fixture
def auditor(users: dict[str, User]) -> Client:
    client = Client()
    client.force_login(users["auditor"])
    return client


def seqs(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<span class="seq">#(\d+)</span>', html)]


def test_the_timeline_pages_oldest_or_newest_first(long_thread: str, auditor: Client) -> None:
    whole = timeline.entries(long_thread)
    assert len(whole) == TOTAL
    first = auditor.get(f"/threads/{long_thread}/").content.decode()
    assert seqs(first) == list(range(1, 51)) and "page 1 of 3" in first
    second = auditor.get(f"/threads/{long_thread}/?order=oldest&page=2").content.decode()
    assert seqs(second) == list(range(51, 101))
    newest = auditor.get(f"/threads/{long_thread}/?order=newest").content.decode()
    assert seqs(newest) == list(range(TOTAL, TOTAL - 50, -1))
    for seq in (51, 73, TOTAL):  # a page's first entry is diffed against the page before
        [paged] = timeline.entries(long_thread, seq, seq)
        assert paged == whole[seq - 1]


def test_the_checkpoint_list_is_paginated(long_thread: str, auditor: Client) -> None:
    body = auditor.get(f"/api/threads/{long_thread}/checkpoints?limit=10&offset=111").json()
    assert body["count"] == TOTAL
    assert [cp["seq"] for cp in body["items"]] == list(range(112, 122))
    whole = DjangoCheckpointStore().list_sync(long_thread)
    assert [cp["id"] for cp in body["items"]] == [cp.id for cp in whole[111:121]]
    assert body["items"][-1]["pending_input"] == whole[120].pending_input


def test_a_large_state_shows_what_changed_and_links_the_rest(auditor: Client) -> None:
    executor = chat_graph(DjangoCheckpointStore())
    result = executor.run_sync({"messages": []})
    for turn in range(30):
        result = executor.resume_sync(result.thread_id, f"turn {turn:02d} " + "x" * 600)
    thread = result.thread_id
    html = auditor.get(f"/threads/{thread}/?order=newest").content.decode()
    assert "Only what changed" in html and "appended" in html and "turn 29 x" in html
    latest = DjangoCheckpointStore().load_sync(thread)
    assert latest is not None
    link = f"/api/checkpoints/{latest.id}/state"
    assert f'href="{link}"' in html
    state = auditor.get(link).json()
    assert state == {"id": latest.id, "thread_id": thread, "seq": 92, "state": latest.state}
    # Entries show their own steps' messages, not the whole conversation again.
    assert "turn 00 x" not in html
    assert len(html) < 300_000
