"""Production execution on RQ (``FORGE_QUEUE=rq``): a run started through the task API,
executed by ``rqworker``.

Everything here crosses process boundaries for real: ``manage.py`` commands enqueue on
Redis (django-tasks-rq), a burst ``rqworker`` runs the tasks, PostgreSQL holds the state.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from forgeui.models import Answer, Interrupt, Run
from tests.forgeui.conftest import database_url, django_env
from tests.processes import manage

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["postgres"]),
]
REDIS_URL = "redis://127.0.0.1:6379/15"  # a database of its own, emptied around each test


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    yield {**django_env(database_url("postgres"), redis_url=REDIS_URL), "FORGE_QUEUE": "rq"}
    client.flushdb()
    client.close()


def work(env: dict[str, str]) -> str:
    """One burst worker: runs what is queued, then exits."""
    done = manage("rqworker", "--burst", "--job-class", "django_tasks_rq.Job", "default",
                  env=env)
    return done.stdout + done.stderr


def test_rqworker_runs_a_started_run_and_then_applies_its_answer(env: dict[str, str]) -> None:
    started = json.loads(manage("start_run", "transfer", "--input", '{"amount": 42}',
                                "--thread-id", "rq-thread", env=env).stdout)
    assert started["thread_id"] == "rq-thread" and started["status"] == "queued"
    assert len(started["run_id"]) == 32  # handed out before the run starts
    assert not Run.objects.using("postgres").exists()  # nothing ran in the web side

    log = work(env)
    assert "start_run_task" in log
    run = Run.objects.using("postgres").get(thread_id="rq-thread")
    assert run.run_id == started["run_id"]
    assert run.status == "interrupted"
    interrupt = Interrupt.objects.using("postgres").pending().get(run=run)

    manage("shell", "-c", "from forgeui.runs import services; "
           f"services.answer_interrupt(None, {interrupt.pk!r}, {{'ok': True}})", env=env)
    assert Interrupt.objects.using("postgres").get(pk=interrupt.pk).status == "answered"
    # Accepted and waiting for a worker: the run reads running, not stuck at its pause.
    assert Run.objects.using("postgres").get(pk=run.pk).status == "running"

    assert "apply_answer_task" in work(env)
    run.refresh_from_db(using="postgres")
    assert run.status == "completed"
    assert run.output == {"input": {"amount": 42}, "approved": {"ok": True}, "done": True}
    assert Answer.objects.using("postgres").get().applied_at is not None
