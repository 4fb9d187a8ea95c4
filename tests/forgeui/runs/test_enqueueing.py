"""A job goes with the transaction that records its work: inside it on a backend whose
queue is in the same database, else once it commits (and never after a rollback)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django_tasks import task_backends
from django_tasks.backends.dummy import DummyBackend

from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.tasks import recover_run_task

pytestmark = pytest.mark.django_db(transaction=True)


class TransactionalDummy(DummyBackend):
    """django-tasks' in-memory backend, saying its queue commits with the transaction."""

    transactional = True


def backend(settings: Any, path: str) -> DummyBackend:
    settings.TASKS = {"default": {"BACKEND": path}, "notify": {"BACKEND": path}}
    found = task_backends["default"]
    assert isinstance(found, DummyBackend)
    return found


def test_a_transactional_backend_takes_the_job_inside_the_transaction(settings: Any) -> None:
    queue = backend(settings, f"{__name__}.TransactionalDummy")
    with transaction.atomic():
        enqueue_on_commit(recover_run_task, "thread-1")
        assert [r.args for r in queue.results] == [["thread-1"]]


def test_another_backend_takes_it_once_the_transaction_commits(settings: Any) -> None:
    queue = backend(settings, "django_tasks.backends.dummy.DummyBackend")
    with transaction.atomic():
        enqueue_on_commit(recover_run_task, "thread-1")
        assert queue.results == []
    assert [r.args for r in queue.results] == [["thread-1"]]
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_on_commit(recover_run_task, "thread-2")
        raise RuntimeError("rolled back")
    assert [r.args for r in queue.results] == [["thread-1"]]
