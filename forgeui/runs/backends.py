"""An in-process django-tasks backend for the embedded default.

django-tasks' ``ImmediateBackend`` runs a task inside ``enqueue``, so a web request that
starts a run would wait for the graph. This backend runs tasks beside the web server, as
``forge_worker`` does (``inflight``): coroutine tasks (the graph tasks) on an event loop
the process owns, up to ``CONCURRENCY`` at once, so a run awaiting a model holds no
thread; their blocking work and sync tasks on a pool of ``WORKERS`` threads. ``enqueue``
returns at once (the API answers 202). Nothing survives a restart; ``manage.py
recover_runs`` picks up runs an exiting process left behind. Production uses
``forgeui.worker.backend.ProcrastinateBackend``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from django.utils import timezone
from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.base import Task, TaskResult, TaskResultStatus
from django_tasks.utils import get_random_id
from typing_extensions import ParamSpec

from forgeui.runs.inflight import run_in_flight

T = TypeVar("T")
P = ParamSpec("P")
logger = logging.getLogger(__name__)

_loop_lock = threading.Lock()
_loops: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}


def _loop(alias: str, workers: int, concurrency: int,
          ) -> tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]:
    """One loop (on a thread of its own) and its in-flight cap per alias, for the process."""
    with _loop_lock:
        if alias not in _loops:
            loop = asyncio.new_event_loop()
            loop.set_default_executor(ThreadPoolExecutor(workers,
                                                         thread_name_prefix=f"forge-{alias}"))
            threading.Thread(target=loop.run_forever, name=f"forge-{alias}-loop",
                             daemon=True).start()
            _loops[alias] = loop, asyncio.Semaphore(concurrency)
        return _loops[alias]


class ThreadPoolBackend(ImmediateBackend):
    """Runs tasks in flight in the process (``OPTIONS: {"WORKERS": 4, "CONCURRENCY": 100}``:
    threads for blocking work, tasks in flight at most)."""

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.workers = int(self.options.get("WORKERS", 4))
        self.concurrency = int(self.options.get("CONCURRENCY", 100))

    def enqueue(self, task: Task[P, T], args: Any, kwargs: Any) -> TaskResult[T]:
        self.validate_task(task)
        result: TaskResult[T] = TaskResult(
            task=task, id=get_random_id(), status=TaskResultStatus.READY, enqueued_at=None,
            started_at=None, last_attempted_at=None, finished_at=None, args=args,
            kwargs=kwargs, backend=self.alias, errors=[], worker_ids=[],
        )
        loop, cap = _loop(self.alias, self.workers, self.concurrency)
        # In a context of its own, as a queued job would be: the caller's (an async view's
        # sync_to_async thread, say) would make the task's own database calls wait on it.
        future = contextvars.Context().run(
            asyncio.run_coroutine_threadsafe, self._run(result, cap), loop)
        _pending.add(future)
        future.add_done_callback(_pending.discard)
        return result

    async def _run(self, result: TaskResult[Any], cap: asyncio.Semaphore) -> None:
        async with cap:
            object.__setattr__(result, "status", TaskResultStatus.RUNNING)
            try:
                value = await run_in_flight(result.task, list(result.args), result.kwargs)
            except Exception:  # as ImmediateBackend: the task failed, the caller goes on
                logger.exception("task %s failed", result.task.module_path)
                object.__setattr__(result, "status", TaskResultStatus.FAILED)
                return
            object.__setattr__(result, "_return_value", value)
            object.__setattr__(result, "finished_at", timezone.now())
            object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)


_pending: set[Future[None]] = set()


def wait_for_tasks(timeout: float | None = None) -> None:
    """Block until every task enqueued so far (and any they enqueue) has finished."""
    while _pending:
        next(iter(set(_pending))).result(timeout)
