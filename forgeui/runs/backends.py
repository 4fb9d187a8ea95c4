"""An in-process django-tasks backend for the embedded default.

django-tasks' ``ImmediateBackend`` runs a task inside ``enqueue``, so a web request that
starts a run would wait for the graph. This backend runs the same code on a small thread
pool owned by the process: ``enqueue`` returns at once (the API answers 202) and the graph
runs beside the web server. Nothing survives a restart; ``manage.py recover_runs`` picks
up runs an exiting process left behind. Production uses ``django_tasks_rq.RQBackend``.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import close_old_connections
from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.base import Task, TaskResult, TaskResultStatus
from django_tasks.utils import get_random_id
from typing_extensions import ParamSpec

T = TypeVar("T")
P = ParamSpec("P")

_pool_lock = threading.Lock()
_pools: dict[str, ThreadPoolExecutor] = {}


def _pool(alias: str, workers: int) -> ThreadPoolExecutor:
    """One pool per backend alias for the life of the process."""
    with _pool_lock:
        if alias not in _pools:
            _pools[alias] = ThreadPoolExecutor(workers, thread_name_prefix=f"forge-{alias}")
        return _pools[alias]


class ThreadPoolBackend(ImmediateBackend):
    """Runs tasks on a process-wide thread pool (``OPTIONS: {"WORKERS": 4}``)."""

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.workers = int(self.options.get("WORKERS", 4))

    def enqueue(self, task: Task[P, T], args: Any, kwargs: Any) -> TaskResult[T]:
        self.validate_task(task)
        result: TaskResult[T] = TaskResult(
            task=task, id=get_random_id(), status=TaskResultStatus.READY, enqueued_at=None,
            started_at=None, last_attempted_at=None, finished_at=None, args=args,
            kwargs=kwargs, backend=self.alias, errors=[], worker_ids=[],
        )
        future = _pool(self.alias, self.workers).submit(self._run, result)
        _pending.add(future)
        future.add_done_callback(_pending.discard)
        return result

    def _run(self, result: TaskResult[Any]) -> None:
        # Like a request: never reuse a connection that went bad between tasks.
        close_old_connections()
        try:
            self._execute_task(result)
        finally:
            close_old_connections()


_pending: set[Future[None]] = set()


def wait_for_tasks(timeout: float | None = None) -> None:
    """Block until every task enqueued so far (and any they enqueue) has finished."""
    while _pending:
        next(iter(set(_pending))).result(timeout)
