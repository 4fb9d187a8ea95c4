"""One LangGraph call at a time per thread, across the workers of one database.

LangGraph's savers do not compare-and-set: two ``invoke`` calls on one thread would both
go on from the same checkpoint and one answer would be lost. PostgreSQL serialises them
with a session advisory lock (every worker process shares it); SQLite, which serves one
process, with a lock per thread id in that process.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections

# Distinguishes these advisory locks from any other user of the two-key form.
LOCK_SPACE = 0x4C47  # "LG"
_local_locks: dict[str, threading.RLock] = {}
_guard = threading.Lock()


@contextmanager
def thread_lock(thread_id: str, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Hold the thread's lock while the block runs."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        key = zlib.crc32(thread_id.encode()) - 2**31  # into int4
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_SPACE, key])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_SPACE, key])
        return
    with _guard:
        lock = _local_locks.setdefault(thread_id, threading.RLock())
    with lock:
        yield
