"""A thread with many large steering notes: every checkpoint carries the notes so far, so
a page of the checkpoint list is held to a byte budget, and pages link the next one."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.api.pagination import PAGE_BYTES
from forgeui.store import DjangoCheckpointStore
from runtime import ResumeTarget
from tests.runtime.store_conformance import chat_graph

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]
NOTES = 150
NOTE_CHARS = 10_000


@pytest.fixture
def noted_thread() -> str:
    """A chat whose every turn brings a large steering note."""
    executor = chat_graph(DjangoCheckpointStore())
    result = executor.run_sync({"messages": []})
    for turn in range(NOTES):
        executor.steer_sync(ResumeTarget(result.run_id), f"note {turn:03d} " + "x" * NOTE_CHARS)
        result = executor.resume_sync(result.thread_id, f"turn {turn}")
    return result.thread_id


@pytest.fixture
def auditor(users: dict[str, User]) -> Client:
    client = Client()
    client.force_login(users["auditor"])
    return client


def test_checkpoint_list_pages_stay_within_a_byte_budget(noted_thread: str,
                                                         auditor: Client) -> None:
    whole = DjangoCheckpointStore().list_sync(noted_thread)
    largest = max(len(auditor.get(f"/api/checkpoints/{cp.id}").content)
                  for cp in (whole[0], whole[-1]))
    # The heaviest end of the thread, followed page by page to its end.
    tail = len(whole) - 40
    url: str | None = f"/api/threads/{noted_thread}/checkpoints?limit=200&offset={tail}"
    seen: list[str] = []
    pages = 0
    while url is not None:
        response = auditor.get(url)
        assert response.status_code == 200
        assert len(response.content) <= max(PAGE_BYTES, largest) + 1000
        body = response.json()
        assert set(body) == {"items", "count", "next"} and body["count"] == len(whole)
        assert body["items"], "every page makes progress"
        seen.extend(cp["id"] for cp in body["items"])
        url, pages = body["next"], pages + 1
        assert pages <= 40
    assert seen == [cp.id for cp in whole[tail:]]  # each checkpoint once, in order
    assert pages > 1
    # A page of one still says where the next starts; the last page says nothing.
    base = f"/api/threads/{noted_thread}/checkpoints"
    body = auditor.get(f"{base}?limit=1&offset=3").json()
    assert [cp["seq"] for cp in body["items"]] == [4]
    assert body["next"] == f"{base}?limit=1&offset=4"
    assert auditor.get(f"{base}?offset={len(whole) - 1}").json()["next"] is None
    # The pages people read show each note once at most, not once per checkpoint.
    run = DjangoCheckpointStore().load_sync(noted_thread)
    assert run is not None
    for url in (f"/threads/{noted_thread}/", f"/threads/{noted_thread}/?order=newest",
                f"/runs/{run.run_id}/"):
        response = auditor.get(url)
        assert response.status_code == 200, url
        assert len(response.content) < NOTES * NOTE_CHARS + 500_000, url
