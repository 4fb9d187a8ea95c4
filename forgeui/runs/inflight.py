"""Running tasks in flight on one event loop: what ``forge_worker`` and the embedded
backend share.

Coroutine tasks are awaited on the loop; sync ones run on its default executor (a bounded
pool), each on a connection of its own thread. Graphs are rebound to ``WorkerStore``
(``in_worker``): Django's store runs its blocking halves and chains of lone sync
steps on the one thread-sensitive thread, so with many runs in flight every save would
queue behind every other, and a node that blocks there would hold them all up; here each
call runs on a pool thread, on that thread's connection, kept open across calls and
closed when it fails.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from functools import partial, wraps
from inspect import iscoroutinefunction
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django_tasks.base import Task
from typing_extensions import ParamSpec

from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor

T = TypeVar("T")
P = ParamSpec("P")


class WorkerStore(DjangoCheckpointStore):
    """``DjangoCheckpointStore`` whose blocking work runs on the loop's default executor."""

    async def call_blocking(self, fn: Callable[[], T]) -> T:
        result: T = await sync_to_async(on_pool_thread, thread_sensitive=False)(fn)
        return result

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        return await self.call_blocking(fn)


def on_pool_thread(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (InterfaceError, OperationalError):
        connection.close()  # the next call on this thread reconnects
        raise


# Set where tasks run in flight: graphs are rebound to this store (``in_worker``), and a
# sync-only executor's calls (a LangGraph graph's ``invoke``) go to the loop's pool, so a
# blocking node never holds the thread every run's ORM work shares.
WORKER_STORE: contextvars.ContextVar[DjangoCheckpointStore | None] = contextvars.ContextVar(
    "forge_worker_store", default=None)
# id -> (the executor, rebound): holding the executor keeps its id from being reused.
_rebound: dict[int, tuple[DurableExecutor, DurableExecutor]] = {}


def off_loop(fn: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """``fn`` as a coroutine, run where the store runs its blocking work: on the loop's
    pool when tasks run in flight (``WorkerStore``), so one job's ORM work never queues
    behind every other's; else thread-sensitive, which under ``async_to_sync`` is the
    caller's own thread, inside its transaction."""
    @wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        store = WORKER_STORE.get() or DjangoCheckpointStore()
        return await store.call_blocking(partial(fn, *args, **kwargs))
    return call


def in_worker(executor: DurableExecutor) -> DurableExecutor:
    """``executor`` on the in-flight store when tasks run in flight (cached: executors live
    as long as the process), else unchanged."""
    worker_store = WORKER_STORE.get()
    if worker_store is None:
        return executor
    if id(executor) not in _rebound:
        _rebound[id(executor)] = executor, executor.with_store(worker_store,
                                                               executor.sync_nodes)
    return _rebound[id(executor)][1]


async def run_in_flight(task: Task[Any, Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run ``task`` on this loop (a coroutine) or its pool (a sync task), graphs on the
    worker's store."""
    WORKER_STORE.set(WORKER)
    if iscoroutinefunction(task.func):
        return await task.func(*args, **kwargs)
    return await sync_to_async(on_fresh_connection, thread_sensitive=False)(
        task.func, args, kwargs)


def on_fresh_connection(func: Callable[..., T], args: list[Any], kwargs: dict[str, Any]) -> T:
    # Webhooks and e-mail: never reuse a connection that went bad between tasks.
    close_old_connections()
    try:
        return func(*args, **kwargs)
    finally:
        close_old_connections()


WORKER = WorkerStore()
