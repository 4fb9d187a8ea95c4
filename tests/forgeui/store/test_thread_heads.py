"""A thread's kept head: a small one in the thread's row at every save; a large one written
whole only every ``HEAD_EVERY`` positions, into that checkpoint's row, so the thread's row
stays small. A load brings it up to date from the records after it, equal to a full
rebuild."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forgeui.models import Checkpoint as CheckpointRow
from forgeui.models import Thread
from forgeui.store import DjangoCheckpointStore
from runtime import Checkpoint
from runtime._jsonvalue import SMALL_TEXT
from runtime.store_kit import HEAD_EVERY
from tests.runtime.store_conformance import chat_graph, expected_messages

DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=DATABASES)
def store(request: pytest.FixtureRequest) -> Iterator[DjangoCheckpointStore]:
    yield DjangoCheckpointStore(request.param)


def head_row(store: DjangoCheckpointStore, thread_id: str) -> tuple[int, int, int]:
    """The thread's position, its kept head's position and that head's length, wherever
    it is kept (the thread's row, or the checkpoint row at that position)."""
    row = Thread.objects.using(store.using).get(pk=thread_id)
    if row.head or not row.head_seq:
        return row.seq, row.head_seq, len(row.head)
    kept = CheckpointRow.objects.using(store.using).get(thread_id=thread_id, seq=row.head_seq)
    return row.seq, row.head_seq, len(kept.head)


def heads_in_checkpoint_rows(store: DjangoCheckpointStore, thread_id: str) -> list[int]:
    """The positions whose checkpoint rows keep a head."""
    rows = CheckpointRow.objects.using(store.using).filter(thread_id=thread_id).exclude(head="")
    return sorted(rows.values_list("seq", flat=True))


def answer(turn: int) -> str:
    return f"message {turn:04d} " + "x" * 180


@pytest.mark.django_db(transaction=True, databases=["sqlite", "postgres"])
def test_a_large_head_is_written_now_and_then_and_loads_up_to_date(
        store: DjangoCheckpointStore) -> None:
    executor = chat_graph(store)
    thread = executor.run_sync({"messages": []}).thread_id
    written: set[int] = set()
    for turn in range(60):
        executor.resume_sync(thread, answer(turn))
        seq, head_seq, size = head_row(store, thread)
        written.add(head_seq)
        latest = store.load_sync(thread)
        assert latest is not None and latest.pending_input == {
            "messages": expected_messages(turn + 1)}
        # The head brought up to date equals the checkpoint rebuilt from every record.
        assert latest == store.load_by_id_sync(latest.id)
        assert seq - head_seq < HEAD_EVERY
    assert size > SMALL_TEXT
    large = {s for s in written if s > 2 and s % HEAD_EVERY}
    # Small heads were written at every save; once large, only on multiples.
    assert large and max(large) < max(written)
    later = sorted(s for s in written if s > max(large))
    assert later and all(s % HEAD_EVERY == 0 for s in later)
    # Large heads went into their checkpoints' rows, and only the latest is kept there;
    # the thread's row is small.
    assert heads_in_checkpoint_rows(store, thread) == [max(later)] == [head_seq]
    assert Thread.objects.using(store.using).get(pk=thread).head == ""


@pytest.mark.django_db(transaction=True, databases=["sqlite", "postgres"])
def test_a_save_of_unknown_position_still_writes_the_head_when_due(
        store: DjangoCheckpointStore) -> None:
    big = "y" * (SMALL_TEXT + 1)
    parent: str | None = None
    for step in range(HEAD_EVERY):
        cp = Checkpoint(id=f"cp-{step}", thread_id="by-hand", node=None,
                        interrupt_payload=None, state={}, history=[],
                        pending_input=None, created_at=1, parent_id=parent,
                        metadata={"note": big, "step": step})
        store.save_sync(cp)  # built by hand: no position known to the store
        parent = cp.id
    assert head_row(store, "by-hand")[:2] == (HEAD_EVERY, HEAD_EVERY)
    latest = store.load_sync("by-hand")
    assert latest is not None and latest.metadata == {"note": big, "step": HEAD_EVERY - 1}


@pytest.mark.django_db(transaction=True, databases=["sqlite", "postgres"])
def test_a_resumed_fork_gets_a_head_of_its_own(store: DjangoCheckpointStore) -> None:
    executor = chat_graph(store)
    original = executor.run_sync({"messages": []}).thread_id
    for turn in range(40):
        executor.resume_sync(original, answer(turn))
    fork = executor.fork_sync(original)
    assert head_row(store, fork) == (1, 0, 0)  # a fork's start writes no head
    executor.resume_sync(fork, answer(40))
    _, head_seq, size = head_row(store, fork)
    assert head_seq >= 2 and size > SMALL_TEXT
    latest = store.load_sync(fork)
    assert latest is not None
    assert latest.pending_input == {"messages": expected_messages(41)}
    assert latest == store.load_by_id_sync(latest.id)
