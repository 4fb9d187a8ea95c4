"""The executor's ``*_sync`` twins on ``DjangoCheckpointStore``, on both databases: a sync
caller's own thread and connection save every step, with no event loop and no trip to
asgiref's thread, and the rows mirror the run exactly as the async way leaves them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from forgeui import models
from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor, NodeContext


def approval(store: DjangoCheckpointStore, seen: list[str]) -> DurableExecutor:
    def prepare(data: dict[str, Any]) -> dict[str, Any]:
        seen.append(threading.current_thread().name)
        return {**data, "prepared": True}

    def approve(data: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        seen.append(threading.current_thread().name)
        return {**data, "answer": ctx.interrupt({"question": "Approve?"})}

    return DurableExecutor([("prepare", prepare), ("approve", approve)], store=store,
                           name="approval")


class SyncHere:
    alias = "sqlite"

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore(self.alias)

    def test_a_start_and_a_resume_save_every_step_from_the_callers_thread(
        self, store: DjangoCheckpointStore,
    ) -> None:
        seen: list[str] = []
        ex = approval(store, seen)
        paused = ex.run_sync({"amount": 7})
        done = ex.resume_sync(paused.thread_id, "yes")
        assert (paused.status, done.status, done.output) == (
            "interrupted", "completed", {"amount": 7, "prepared": True, "answer": "yes"})
        assert seen == [threading.current_thread().name] * 3
        saved = store.list_sync(paused.thread_id)
        assert [(c.status, c.node) for c in saved] == [
            ("running", None), ("running", "prepare"), ("interrupted", "approve"),
            ("running", "approve"), ("completed", "approve")]
        run = models.Run.objects.using(self.alias).get(run_id=done.run_id)
        assert (run.status, run.latest_checkpoint_id) == ("completed", done.checkpoint_id)
        (interrupt,) = models.Interrupt.objects.using(self.alias).filter(run_id=done.run_id)
        assert interrupt.status == "answered"

    def test_inside_a_callers_transaction_runs_save_in_it_here_and_roll_back_with_it(
        self, store: DjangoCheckpointStore, loops: list[str],
    ) -> None:
        seen: list[str] = []
        ex = approval(store, seen)
        with pytest.raises(RuntimeError), transaction.atomic(using=self.alias):
            paused = ex.run_sync({"amount": 3})
            assert paused.status == "interrupted"
            assert models.Run.objects.using(self.alias).filter(run_id=paused.run_id).exists()
            raise RuntimeError("the caller changes its mind")
        assert store.load_sync(paused.thread_id) is None
        assert not models.Run.objects.using(self.alias).filter(run_id=paused.run_id).exists()
        assert loops == [] and seen == [threading.current_thread().name] * 2
        with transaction.atomic(using=self.alias):
            kept = ex.run_sync({"amount": 4})
        done = ex.resume_sync(kept.thread_id, "yes")
        assert (done.status, done.output["answer"]) == ("completed", "yes")
        assert loops == []


class TestSyncHereOnSQLite(SyncHere):
    pytestmark = pytest.mark.django_db(transaction=True, databases=["sqlite"])
    alias = "sqlite"


class TestSyncHereOnPostgres(SyncHere):
    pytestmark = [pytest.mark.postgres,
                  pytest.mark.django_db(transaction=True, databases=["postgres"])]
    alias = "postgres"
