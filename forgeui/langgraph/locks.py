"""One LangGraph call at a time per thread, across the workers of one database.

LangGraph's savers do not compare-and-set: two ``invoke`` calls on one thread would both
go on from the same checkpoint and one answer would be lost. PostgreSQL serialises them
with a session advisory lock (every worker process shares it); SQLite, which serves one
process, with a lock per thread id in that process.

``thread_lock`` holds the lock around a blocking block, on the calling thread's
connection. ``thread_lock_async`` holds it around an awaited one (``ainvoke``), whose
blocking parts run on whichever pool thread is free: the advisory lock is then taken and
let go on one connection kept for it (the lock thread's), and both kinds of lock are
polled rather than waited on, so a run waiting for a thread holds no pool thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from functools import partial

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

logger = logging.getLogger(__name__)

# Distinguishes these advisory locks from any other user of the two-key form.
LOCK_SPACE = 0x4C47  # "LG"
ADVISORY = {"take": "SELECT pg_try_advisory_lock(%s, %s)",
            "let go": "SELECT pg_advisory_unlock(%s, %s)"}
# How long a waiter sleeps between tries, at first and at most.
FIRST_WAIT_S, MOST_WAIT_S = 0.005, 0.1
# Not re-entrant: ``thread_lock_async`` may let go on another thread than it took it on.
_local_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()
# The one thread (and so the one connection) that holds the awaited calls' advisory locks.
_lock_thread = ThreadPoolExecutor(1, thread_name_prefix="forge-langgraph-locks")


def _key(thread_id: str) -> int:
    return zlib.crc32(thread_id.encode()) - 2**31  # into int4


def _local_lock(thread_id: str) -> threading.Lock:
    with _guard:
        return _local_locks.setdefault(thread_id, threading.Lock())


@contextmanager
def thread_lock(thread_id: str, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Hold the thread's lock while the block runs."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        key = _key(thread_id)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_SPACE, key])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_SPACE, key])
        return
    with _local_lock(thread_id):
        yield


@asynccontextmanager
async def thread_lock_async(thread_id: str, using: str = DEFAULT_DB_ALIAS,
                            ) -> AsyncIterator[None]:
    """Hold the thread's lock while the awaited block runs.

    Calls of this process on one thread wait for each other on the local lock first: a
    session advisory lock is re-entrant, and all of them share the lock thread's session.
    """
    local = _local_lock(thread_id)
    await _until(lambda: _done(local.acquire(blocking=False)))
    try:
        if connections[using].vendor != "postgresql":
            yield
            return
        key = _key(thread_id)
        await _until(lambda: _try_to_take(using, key))
        try:
            yield
        finally:
            let_go = _lock_thread.submit(_advisory, using, "let go", key)
            if not await asyncio.shield(asyncio.wrap_future(let_go)):
                logger.warning("the lock of LangGraph thread %s was lost before its end",
                               thread_id)
    finally:
        local.release()


async def _done(value: bool) -> bool:
    return value


async def _until(take: Callable[[], Awaitable[bool]]) -> None:
    """Await ``take()`` until it is true, sleeping longer between tries up to a bound."""
    wait = FIRST_WAIT_S
    while not await take():
        await asyncio.sleep(wait)
        wait = min(wait * 2, MOST_WAIT_S)


async def _try_to_take(using: str, key: int) -> bool:
    """One try on the lock thread; a waiter cancelled meanwhile lets go of what it took."""
    taking = _lock_thread.submit(_advisory, using, "take", key)
    try:
        return await asyncio.wrap_future(taking)
    except asyncio.CancelledError:
        taking.add_done_callback(partial(_let_go_if_taken, using, key))
        raise


def _let_go_if_taken(using: str, key: int, taking: Future[bool]) -> None:
    if not taking.cancelled() and taking.exception() is None and taking.result():
        _lock_thread.submit(_advisory, using, "let go", key)


def _advisory(using: str, step: str, key: int) -> bool:
    """One try to take (or let go of) the lock on the lock thread's connection; a broken
    connection is closed (its session's locks went with it), so the next call opens one."""
    connection = connections[using]
    try:
        with connection.cursor() as cursor:
            cursor.execute(ADVISORY[step], [LOCK_SPACE, key])
            return bool(cursor.fetchone()[0])
    except (InterfaceError, OperationalError):
        connection.close()
        raise
