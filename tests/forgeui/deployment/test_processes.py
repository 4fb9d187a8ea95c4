"""Several processes on one PostgreSQL: the resume race and a worker killed mid-node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from forgeui.models import Checkpoint as CheckpointRow
from forgeui.models import Run, Thread
from forgeui.runs import registry
from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor
from tests.forgeui.conftest import ROOT, database_url, django_env, lines
from tests.processes import manage, wait_until

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["postgres"]),
]
CONTENDERS = 20


@pytest.fixture
def store(close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
    yield DjangoCheckpointStore("postgres")


def on_postgres(graph: str, store: DjangoCheckpointStore) -> DurableExecutor:
    return registry.get_executor(graph).with_store(store)


def test_twenty_processes_resume_one_interrupt_and_exactly_one_wins(
    store: DjangoCheckpointStore, ledger: Path, tmp_path: Path
) -> None:
    paused = on_postgres("race", store).run_sync({"ledger": str(ledger), "amount": 20})
    assert paused.status == "interrupted"
    go = tmp_path / "go"
    env = django_env(database_url("postgres"))
    contenders = subprocess.Popen(
        [sys.executable, "-m", "tests.forgeui.race_worker", paused.thread_id, str(go),
         str(CONTENDERS)],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert contenders.stdout is not None
    for _ in range(CONTENDERS):
        assert contenders.stdout.readline().strip() == "ready"
    go.touch()
    out, err = contenders.communicate(timeout=120)
    assert contenders.returncode == 0, err
    outcomes = [json.loads(line) for line in out.splitlines()]
    assert len(outcomes) == CONTENDERS, outcomes

    winners = [o for o in outcomes if o["outcome"] == "won"]
    assert len(winners) == 1, outcomes
    assert {o["outcome"] for o in outcomes} - {"won"} <= {"stale"}
    assert lines(ledger) == [f"paid 20 answer={winners[0]['value']}"]
    latest = store.load_sync(paused.thread_id)
    assert latest is not None and latest.status == "completed"
    assert latest.output["answer"] == winners[0]["value"]
    assert_chain_intact(paused.thread_id)


def test_a_worker_killed_mid_node_leaves_the_last_checkpoint_and_recovery_finishes(
    store: DjangoCheckpointStore, ledger: Path, tmp_path: Path
) -> None:
    entered, gate = tmp_path / "entered.txt", tmp_path / "gate"
    order = {"ledger": str(ledger), "entered": str(entered), "gate": str(gate)}
    env = django_env(database_url("postgres"))
    with open(tmp_path / "worker.log", "w") as log:
        worker = subprocess.Popen(  # the in-process task backend: this process is the worker
            [sys.executable, str(ROOT / "manage.py"), "start_run", "blocking", "--input",
             json.dumps(order), "--thread-id", "killed-thread"],
            env=env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True,
        )
        wait_until(lambda: entered.exists(), 60, "the node to start")
        os.killpg(worker.pid, signal.SIGKILL)
        assert worker.wait(10) == -signal.SIGKILL

    assert lines(ledger) == ["charged"]  # the side effect happened, and was recorded
    last = store.load_sync("killed-thread")
    assert last is not None and last.status == "running"
    assert last.once == {"charge": {"charged": 1}}
    assert Thread.objects.using("postgres").get(pk="killed-thread").latest_checkpoint_id == last.id
    assert_chain_intact("killed-thread")

    gate.touch()
    out = manage("recover_runs", "--older-than", "0", env=env).stdout
    assert "recover thread killed-thread" in out

    run = Run.objects.using("postgres").get(pk=last.run_id)
    assert run.status == "completed", run.error
    assert run.output["finished"] is True and run.output["charged"] == 1
    assert lines(ledger) == ["charged"]  # once: not charged again by the re-run
    assert lines(entered) == ["entered", "entered"]  # the node itself did run again
    assert_chain_intact("killed-thread")


def assert_chain_intact(thread_id: str) -> None:
    """Every checkpoint's parent is the one before it, and the thread points at the last."""
    rows = list(CheckpointRow.objects.using("postgres").of_thread(thread_id))
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    assert [r.parent_id for r in rows] == ["", *[r.id for r in rows[:-1]]]
    assert Thread.objects.using("postgres").get(pk=thread_id).latest_checkpoint_id == rows[-1].id


def test_a_run_whose_worker_died_mid_answer_reads_running_until_recovered(
    store: DjangoCheckpointStore, tmp_path: Path
) -> None:
    """Answered through the dashboard's service, the worker is killed while the resumed
    node (inside a sub-agent) works: the tree reads running, and once ``recover_runs``
    has taken it over, completed; no row stays running."""
    order = {"ledger": str(tmp_path / "ledger"), "entered": str(tmp_path / "entered"),
             "gate": str(tmp_path / "gate")}
    paused = on_postgres("gated_team", store).run_sync(order)
    (asked,) = paused.interrupts
    env = django_env(database_url("postgres"))
    answer = (f"from forgeui.runs import backends, services; "
              f"services.answer_interrupt(None, {asked.id!r}, 'yes'); backends.wait_for_tasks()")
    with open(tmp_path / "worker.log", "w") as log:
        worker = subprocess.Popen(  # the in-process task backend: this process is the worker
            [sys.executable, str(ROOT / "manage.py"), "shell", "-c", answer],
            env=env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True,
        )
        wait_until(lambda: Path(order["entered"]).exists(), 60, "the node to start")
        os.killpg(worker.pid, signal.SIGKILL)
        assert worker.wait(10) == -signal.SIGKILL

    tree = Run.objects.using("postgres").filter(root_thread_id=paused.thread_id)
    assert {r.status for r in tree} == {"running"}  # stuck: nobody is working on it
    Path(order["gate"]).touch()
    out = manage("recover_runs", "--older-than", "0", env=env).stdout
    assert f"recover thread {paused.thread_id}" in out
    assert {r.status for r in tree.all()} == {"completed"}
    assert lines(Path(order["ledger"])) == ["paid None answer=yes"]
