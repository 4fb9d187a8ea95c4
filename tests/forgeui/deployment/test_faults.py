"""Fault tests against real PostgreSQL: what survives a part failing.

The PostgreSQL connection is dropped in the middle of a checkpoint save: the backend is
terminated with ``pg_terminate_backend`` from another connection just as the save's
compare-and-set statement is sent, so the statement fails the way a network drop or a
server restart would make it fail.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import Error, connections

from forgeui.models import Checkpoint, Interrupt, Run
from forgeui.runs import registry
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.conftest import lines

pytestmark = [pytest.mark.postgres,
              pytest.mark.django_db(transaction=True, databases=["postgres"])]

# The statement that advances a thread: in a save's first (forgeui.models.queries).
SAVE = "UPDATE forgeui_thread SET latest_checkpoint_id"


def terminate(pid: int) -> None:
    db = settings.DATABASES["postgres"]
    with psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"],
                         dbname=db["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def drop_connection_at_save(number: int) -> Callable[..., Any]:
    """An execute wrapper that kills its own backend as save ``number`` is sent."""
    saves = 0

    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool,
                context: dict[str, Any]) -> Any:
        nonlocal saves
        if SAVE in sql:
            saves += 1
            if saves == number:
                terminate(context["connection"].connection.info.backend_pid)
        return execute(sql, params, many, context)

    return wrapper


def checkpoints(thread_id: str) -> list[str]:
    return list(Checkpoint.objects.using("postgres").of_thread(thread_id)
                .values_list("id", flat=True))


# Resuming saves three checkpoints: 1 the answer accepted, 2 "ask" done, 3 "pay" done.
@pytest.mark.parametrize("failing_save", [1, 2, 3])
def test_a_connection_dropped_mid_save_fails_cleanly_and_a_retry_completes_the_run(
        tmp_path: Path, failing_save: int) -> None:
    ledger = tmp_path / "ledger.txt"
    ex = registry.get_executor("race").with_store(DjangoCheckpointStore("postgres"))
    paused = async_to_sync(ex.run)({"ledger": str(ledger), "amount": 5}, thread_id="t-drop")
    assert paused.status == "interrupted"
    before = checkpoints("t-drop")

    with (connections["postgres"].execute_wrapper(drop_connection_at_save(failing_save)),
          pytest.raises(Error)):
        async_to_sync(ex.resume)("t-drop", True)

    # Nothing of the failed save is left; the run stands at its last good checkpoint,
    # and its rows agree with that checkpoint.
    after = checkpoints("t-drop")
    assert len(after) == len(before) + failing_save - 1 and after[:len(before)] == before
    latest = Run.objects.using("postgres").get(pk=paused.run_id)
    assert latest.latest_checkpoint_id == after[-1]
    if failing_save == 1:  # the answer itself was never recorded: still pending
        assert latest.status == "interrupted"
        assert Interrupt.objects.using("postgres").get(run_id=paused.run_id).status == "pending"
    assert lines(ledger) == ([] if failing_save < 3 else ["paid 5 answer=True"])

    # A retry on a fresh connection completes it. "pay" is deliberately not idempotent:
    # when the save after it was lost, the retry runs it again (nodes run at least once;
    # only what a saved checkpoint records is never redone).
    retry = ex.resume if failing_save == 1 else ex.recover
    done = async_to_sync(retry)("t-drop", *([True] if failing_save == 1 else []))
    assert done.status == "completed"
    assert Run.objects.using("postgres").get(pk=paused.run_id).status == "completed"
    assert lines(ledger) == ["paid 5 answer=True"] * (2 if failing_save == 3 else 1)
