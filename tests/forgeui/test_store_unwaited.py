"""A resume's claim commits without waiting for the disk; every node's save still waits
(``forgeui.unwaited``), on both databases, on the planned and the reading save path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connections, transaction

from forgeui import registry
from forgeui.store import DjangoCheckpointStore
from runtime import CheckpointConflict, DurableExecutor, NodeContext
from tests.runtime.store_conformance import make_checkpoint

from .conftest import ROOT, database_url, django_env, lines, manage


def approval(store: DjangoCheckpointStore) -> DurableExecutor:
    """The benchmark's shape: prepare -> approve (interrupt) -> execute."""
    def approve(data: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {**data, "answer": ctx.interrupt("Approve?")}

    return DurableExecutor([("prepare", lambda data: {**data, "prepared": True}),
                            ("approve", approve),
                            ("execute", lambda data: {**data, "done": True})],
                           store=store, name="unwaited")


class Unwaited(ABC):
    """The checks both databases share; each subclass says how its database is watched."""

    alias = "sqlite"

    @abstractmethod
    def statements(self) -> AbstractContextManager[list[str]]:
        """Every statement the store sends on this thread's connection meanwhile."""

    @abstractmethod
    def waits_for_disk(self) -> Any:
        """The connection's setting that says how a commit waits for the disk."""

    @abstractmethod
    def claims(self, statements: list[str]) -> list[str]:
        """The statements that made a commit skip waiting for the disk."""

    @abstractmethod
    def assert_only_the_claim_unwaited(self, sent: list[str]) -> None:
        """Of a resume's statements, only the claim's transaction skipped the wait."""

    def resume_traced(self, store: DjangoCheckpointStore) -> list[str]:
        ex = approval(store)
        paused = ex.run_sync({"amount": 1})
        before = self.waits_for_disk()
        with self.statements() as sent:
            done = ex.resume_sync(paused.thread_id, "yes")
        assert (done.status, done.output["answer"]) == ("completed", "yes")
        assert self.waits_for_disk() == before, "the connection's setting was not restored"
        saved = store.list_sync(paused.thread_id)
        assert [c.status for c in saved] == ["running", "running", "interrupted", "running",
                                             "running", "completed"]
        return sent

    def test_a_resume_claims_without_waiting_and_saves_each_node_durably(self) -> None:
        sent = self.resume_traced(DjangoCheckpointStore(self.alias))
        self.assert_only_the_claim_unwaited(sent)

    def test_the_reading_save_path_claims_the_same_way(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        taken: list[str] = []
        monkeypatch.setattr("forgeui.store.plan_save", lambda cp: taken.append(cp.id) and None)
        sent = self.resume_traced(DjangoCheckpointStore(self.alias))
        assert len(taken) >= 3, "the reading path was not taken"
        self.assert_only_the_claim_unwaited(sent)

    def test_inside_a_callers_transaction_the_callers_commit_decides(self) -> None:
        store = DjangoCheckpointStore(self.alias)
        first = make_checkpoint("t-outer", None, run_id="r-outer", interrupts=[])
        store.save_sync(first)
        with self.statements() as sent, transaction.atomic(using=self.alias):
            store.save_sync(make_checkpoint("t-outer", first.id, run_id="r-outer",
                                            interrupts=[]), durable=False)
        assert self.claims(sent) == []
        assert len(store.list_sync("t-outer")) == 2

    def test_an_unwaited_save_is_seen_by_every_other_writer_at_once(self) -> None:
        store = DjangoCheckpointStore(self.alias)
        first = make_checkpoint("t-race", None, run_id="r-race", interrupts=[])
        store.save_sync(first)
        claim = make_checkpoint("t-race", first.id, run_id="r-race", interrupts=[])
        store.save_sync(claim, durable=False)
        outcome: list[Any] = []

        def rival() -> None:  # another thread: its own connection
            try:
                outcome.append(store.load_sync("t-race"))
                store.save_sync(make_checkpoint("t-race", first.id, run_id="r-race",
                                                interrupts=[]))
            except CheckpointConflict as exc:
                outcome.append(exc)
            finally:
                connections.close_all()

        thread = threading.Thread(target=rival)
        thread.start()
        thread.join(10)
        assert [type(o) for o in outcome] == [type(claim), CheckpointConflict]
        assert outcome[0].id == claim.id
        assert outcome[1].latest == claim.id


class TestUnwaitedOnSQLite(Unwaited):
    pytestmark = pytest.mark.django_db(transaction=True, databases=["sqlite"])
    alias = "sqlite"

    @contextmanager
    def statements(self) -> Iterator[list[str]]:
        connection = connections[self.alias]
        connection.ensure_connection()
        sent: list[str] = []
        connection.connection.set_trace_callback(sent.append)
        try:
            yield sent
        finally:
            connection.connection.set_trace_callback(None)

    def waits_for_disk(self) -> Any:
        with connections[self.alias].cursor() as cursor:
            return cursor.execute("PRAGMA synchronous").fetchone()[0]

    def claims(self, statements: list[str]) -> list[str]:
        return [s for s in statements if s == "PRAGMA synchronous=1"]

    def assert_only_the_claim_unwaited(self, sent: list[str]) -> None:
        assert self.waits_for_disk() == 2  # FULL, as settings.database() asks
        marks = [s for s in sent if s.startswith(("PRAGMA synchronous=", "BEGIN", "COMMIT"))]
        # The claim's transaction alone runs at NORMAL; the nodes' commit at FULL.
        assert marks == ["PRAGMA synchronous=1", "BEGIN IMMEDIATE", "COMMIT",
                         "PRAGMA synchronous=2", "BEGIN IMMEDIATE", "COMMIT",
                         "BEGIN IMMEDIATE", "COMMIT"], marks


class TestUnwaitedOnPostgres(Unwaited):
    pytestmark = [pytest.mark.postgres,
                  pytest.mark.django_db(transaction=True, databases=["postgres"])]
    alias = "postgres"

    @contextmanager
    def statements(self) -> Iterator[list[str]]:
        sent: list[str] = []

        def record(execute: Callable[..., Any], sql: str, params: Any, many: bool,
                   context: dict[str, Any]) -> Any:
            sent.append(sql)
            return execute(sql, params, many, context)

        with connections[self.alias].execute_wrapper(record):
            yield sent

    def waits_for_disk(self) -> Any:
        with connections[self.alias].cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    def claims(self, statements: list[str]) -> list[str]:
        return [s for s in statements if "synchronous_commit" in s]

    def assert_only_the_claim_unwaited(self, sent: list[str]) -> None:
        assert self.waits_for_disk() == "on"
        writes = [s for s in sent if s.startswith(("WITH moved AS", "UPDATE", "INSERT",
                                                   "SET LOCAL"))]
        unwaited = self.claims(sent)
        assert len(unwaited) == 1, sent
        # The claim is the resume's first write; nothing after it skips the wait.
        assert writes.index(unwaited[0]) == 0, writes


@pytest.mark.slow
@pytest.mark.parametrize("alias", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.django_db(transaction=True, databases=["sqlite", "postgres"])
def test_a_worker_killed_after_its_claim_keeps_the_answer_and_recovery_applies_it(
        alias: str, ledger: Path, tmp_path: Path, close_worker_connections: None) -> None:
    """The claim's commit did not wait for the disk, but a killed process loses nothing
    the database has committed: recovery finds the claim and runs the node with the
    worker's answer, once."""
    store = DjangoCheckpointStore(alias)
    entered, gate, go = tmp_path / "entered.txt", tmp_path / "gate", tmp_path / "go"
    paused = registry.get_executor("gated").with_store(store).run_sync(
        {"ledger": str(ledger), "entered": str(entered), "gate": str(gate), "amount": 5})
    env = django_env(database_url(alias))
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.forgeui.race_worker", paused.thread_id, "from-worker",
         str(go), "gated"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True)
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        go.touch()
        deadline = time.monotonic() + 60
        while not entered.exists():  # claimed, and inside the node
            assert time.monotonic() < deadline, "the worker never reached the node"
            time.sleep(0.05)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
        assert worker.stdout is not None
        worker.stdout.close()
    assert worker.returncode == -signal.SIGKILL

    claim = store.load_sync(paused.thread_id)
    assert claim is not None and claim.status == "running"
    assert [a["value"] for a in claim.answers.values()] == ["from-worker"]
    assert lines(ledger) == []

    gate.touch()
    out = manage("recover_runs", "--older-than", "0", env=env).stdout
    assert f"recover thread {paused.thread_id}" in out
    done = store.load_sync(paused.thread_id)
    assert done is not None and done.status == "completed"
    assert lines(ledger) == ["paid 5 answer=from-worker"]
