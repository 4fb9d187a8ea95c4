"""The store's memory of what this process committed last per thread (``recent``): the
guess a resume starts from instead of a read, on both databases. Only committed saves
are remembered, and a stale copy costs a retry, never a misplaced answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from forgeui.recent import RecentCheckpoints, recent_checkpoints
from forgeui.store import DjangoCheckpointStore
from runtime import CheckpointConflict, DurableExecutor, NodeContext
from tests.runtime.store_conformance import make_checkpoint


def two_approvals(store: DjangoCheckpointStore) -> DurableExecutor:
    def ask(name: str) -> Any:
        def node(data: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
            return {**data, name: ctx.interrupt(f"{name}?")}
        return node

    return DurableExecutor([("first", ask("first")), ("second", ask("second"))],
                           store=store, name="two")


class RecentCopies:
    alias = "sqlite"

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore(self.alias)

    @pytest.fixture
    def reads(self, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        seen: list[str] = []
        load = DjangoCheckpointStore.load_sync

        def counted(store: DjangoCheckpointStore, thread_id: str) -> Any:
            seen.append(thread_id)
            return load(store, thread_id)

        monkeypatch.setattr(DjangoCheckpointStore, "load_sync", counted)
        return seen

    def test_a_committed_save_is_remembered_as_the_database_has_it(
        self, store: DjangoCheckpointStore,
    ) -> None:
        cp = make_checkpoint("t-rec", None, run_id="r-rec")
        store.save_sync(cp)
        copy, latest = store.recent_sync("t-rec"), store.load_sync("t-rec")
        assert copy is not None and latest is not None
        assert copy.to_dict() == latest.to_dict() == cp.to_dict()
        copy.state["changed"] = True  # each call is a copy of its own
        assert "changed" not in store.recent_sync("t-rec").state  # type: ignore[union-attr]
        assert store.recent_sync("t-unknown") is None

    def test_a_save_that_may_not_commit_or_did_not_is_forgotten(
        self, store: DjangoCheckpointStore,
    ) -> None:
        first = make_checkpoint("t-forget", None, run_id="r-forget", interrupts=[])
        store.save_sync(first)
        with transaction.atomic(using=self.alias):  # the caller may still roll back
            store.save_sync(make_checkpoint("t-forget", first.id, run_id="r-forget"))
        assert store.recent_sync("t-forget") is None
        latest = store.load_sync("t-forget")
        assert latest is not None
        again = make_checkpoint("t-forget", latest.id, run_id="r-forget", interrupts=[])
        store.save_sync(again)
        assert store.recent_sync("t-forget").id == again.id  # type: ignore[union-attr]
        with pytest.raises(CheckpointConflict):
            store.save_sync(make_checkpoint("t-forget", first.id, run_id="r-forget"))
        assert store.recent_sync("t-forget") is None
        store.save_sync(make_checkpoint("t-forget", again.id, run_id="r-forget"))
        store.delete_sync("t-forget")
        assert store.recent_sync("t-forget") is None

    async def test_a_resume_of_a_run_paused_here_reads_nothing(
        self, store: DjangoCheckpointStore, reads: list[str],
    ) -> None:
        ex = two_approvals(store)
        paused = await ex.run({})
        result = await ex.resume(paused.thread_id, "one")
        assert [i.node for i in result.interrupts] == ["second"]
        assert reads == []

    async def test_a_stale_copy_loses_the_compare_and_set_and_the_answer_goes_to_the_latest(
        self, store: DjangoCheckpointStore, reads: list[str],
    ) -> None:
        ex = two_approvals(store)
        paused = await ex.run({})
        thread = paused.thread_id
        stale = recent_checkpoints.get(self.alias, thread)
        assert stale is not None
        await ex.resume(thread, "one")  # as if another process had answered the first
        recent_checkpoints.put(self.alias, thread, stale)
        done = await ex.resume(thread, "two")
        assert (done.status, done.output) == ("completed", {"first": "one", "second": "two"})
        assert reads == [thread]
        saved = await store.list(thread)
        assert [c.status for c in saved] == [  # one claim per resume: the lost one left none
            "running", "interrupted", "running", "running", "interrupted", "running",
            "completed"]


class TestRecentCopiesOnSQLite(RecentCopies):
    pytestmark = pytest.mark.django_db(transaction=True, databases=["sqlite"])
    alias = "sqlite"


class TestRecentCopiesOnPostgres(RecentCopies):
    pytestmark = [pytest.mark.postgres,
                  pytest.mark.django_db(transaction=True, databases=["postgres"])]
    alias = "postgres"


def test_the_memory_keeps_the_latest_threads_within_its_budget() -> None:
    memory = RecentCheckpoints(size=2, budget=80)
    memory.put("db", "a", "x" * 10)
    memory.put("db", "b", "y" * 10)
    memory.put("db", "c", "z" * 10)  # three threads: the oldest goes
    assert (memory.get("db", "a"), memory.get("db", "b")) == (None, "y" * 10)
    assert memory.get("other-db", "b") is None
    memory.put("db", "b", "w" * 10)  # saved again: the newest now
    memory.put("db", "d", "v" * 10)
    assert (memory.get("db", "b"), memory.get("db", "c")) == ("w" * 10, None)
    memory.put("db", "e", "u" * 11)  # more than an eighth of the budget: not kept
    assert memory.get("db", "e") is None and memory.used == 20
    memory.forget("db", "b")
    assert memory.get("db", "b") is None and memory.used == 10
