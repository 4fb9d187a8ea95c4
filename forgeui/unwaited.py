"""Commits that need not wait for the disk: a claim's (``BlockingStore.save_sync``,
``durable=False``).

A resume first claims the answer (a commit that every other resumer sees at once, so
only one runs the node), then saves after each node. The claim's commit need not reach
the disk before the node runs: the node's save reaches it, and the disk writes the
database's log in order, so the claim lands with that save. A crash before it leaves the
claim's caller unanswered, as a crash just before the claim would; a killed process
loses nothing either way, since the commit is in the operating system's hands.

- SQLite (WAL): ``synchronous=NORMAL`` for that one transaction; the next
  ``synchronous=FULL`` commit syncs the log, and every frame before it with it.
- PostgreSQL: ``synchronous_commit = off`` for that one transaction; a later commit that
  waits for its log flush also flushes everything logged before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

NORMAL = 1  # PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA

# Joined into a PostgreSQL statement that is its own transaction (autocommit), so the
# setting holds for that transaction alone: the statement needs no SET round trip.
POSTGRES_JOIN = "(SELECT set_config('synchronous_commit', 'off', true)) AS unwaited"
POSTGRES_SET_LOCAL = "SET LOCAL synchronous_commit = off"


@contextmanager
def sqlite_unwaited(raw: Any) -> Iterator[None]:
    """Commits on ``raw`` (a ``sqlite3`` connection, outside a transaction) wait for
    no sync until the block ends; a connection set to sync even less is left alone."""
    level = raw.execute("PRAGMA synchronous").fetchone()[0]
    if level <= NORMAL:
        yield
        return
    raw.execute(f"PRAGMA synchronous={NORMAL:d}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA synchronous={int(level):d}")
