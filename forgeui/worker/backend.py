"""``ProcrastinateBackend``: django-tasks' interface on procrastinate's PostgreSQL queue.

``enqueue`` defers one ``forge.task`` job on the caller's own database connection, so
inside a transaction the job commits, or not, with what it refers to. The job carries
the task's path and its arguments (ids); the backend's alias names the queue, and a
capped graph's lane its lock (``caps``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.utils import timezone
from django_tasks.backends.base import BaseTaskBackend
from django_tasks.base import Task, TaskResult, TaskResultStatus
from procrastinate.contrib.django import app
from typing_extensions import ParamSpec

from forgeui.worker import caps
from forgeui.worker.jobs import JOB

T = TypeVar("T")
P = ParamSpec("P")


class ProcrastinateBackend(BaseTaskBackend):
    """Jobs for ``forge_worker``; results are not kept (tasks record their own)."""

    supports_async_task = True
    supports_get_result = False
    # Its queue is the database's own tables: a job deferred inside a transaction commits
    # with it, so callers need not wait for the commit to enqueue.
    transactional = True

    def enqueue(self, task: Task[P, T], args: Any, kwargs: Any) -> TaskResult[T]:
        self.validate_task(task)
        lock = caps.lock_for(task.name, list(args))
        job_id = app.configure_task(JOB, queue=self.alias, lock=lock).defer(
            path=task.module_path, args=list(args), kwargs=dict(kwargs))
        return TaskResult(
            task=task, id=str(job_id), status=TaskResultStatus.READY,
            enqueued_at=timezone.now(), started_at=None, last_attempted_at=None,
            finished_at=None, args=list(args), kwargs=dict(kwargs), backend=self.alias,
            errors=[], worker_ids=[])
