"""A fork reads what it copies: where the source sits in its thread is the row's ``seq``,
not found by rebuilding the thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from forgeui.models import AuditEntry, Checkpoint, Run
from forgeui.runs import services
from forgeui.store import DjangoCheckpointStore

pytestmark = pytest.mark.django_db(transaction=True)


class RecordReads:
    """The statements run inside it that read checkpoints' records."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool,
                 context: dict[str, Any]) -> Any:
        if sql.lstrip().startswith("SELECT") and '"forgeui_checkpoint"."record"' in sql:
            self.sql.append(sql)
        return execute(sql, params, many, context)


def test_a_fork_of_an_early_checkpoint_reads_none_of_the_later_ones(
        users: dict[str, User]) -> None:
    run_id = services.start_run(users["supervisor"], "supervisor", {"topic": "q3"}).run_id
    thread_id = Run.objects.get(pk=run_id).thread_id
    for n in range(4):  # each note is saved as a checkpoint of its own
        services.add_steering_note(users["supervisor"], run_id, f"note {n}")
    history = DjangoCheckpointStore().list_sync(thread_id)
    assert len(history) >= 5  # a thread long enough for a replay to show
    reads = RecordReads()
    with connection.execute_wrapper(reads):
        services.fork_thread(users["reviewer"], thread_id, history[0].id)
    entry = AuditEntry.objects.get(action="thread.fork")
    assert entry.detail["seq"] == Checkpoint.objects.get(pk=history[0].id).seq == 1
    assert reads.sql, "the copy reads what it copies"
    # Records are read up to a position (the source's), never a whole thread to the end.
    assert all('"forgeui_checkpoint"."seq" <=' in sql for sql in reads.sql), reads.sql
