"""The statements ``ForgeSaver`` runs on every step, written out once.

Saving and loading a checkpoint run every step of every graph; building their queries
through the ORM costs more than running them. These are plain SQL that SQLite and
PostgreSQL both take, on Django's own connection (so in the caller's transaction). On
PostgreSQL a save is one statement (the blobs' insert as a CTE), so one round trip.
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from django.db import connections

from ..models import LangGraphBlob, LangGraphCheckpoint, LangGraphWrite

CHECKPOINT = LangGraphCheckpoint._meta.db_table
BLOB = LangGraphBlob._meta.db_table
WRITE = LangGraphWrite._meta.db_table

Row = namedtuple("Row", ["thread_id", "checkpoint_ns", "checkpoint_id",
                         "parent_checkpoint_id", "type", "checkpoint", "metadata"])
BlobRow = namedtuple("BlobRow", ["thread_id", "checkpoint_ns", "channel", "version", "type",
                                 "blob", "base_version", "root_version", "depth"])

_SELECT_CHECKPOINT = (
    f"SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    f"checkpoint, metadata FROM {CHECKPOINT} WHERE thread_id = %s AND checkpoint_ns = %s")
_SELECT_BLOBS = (f"SELECT thread_id, checkpoint_ns, channel, version, type, blob, "
                 f"base_version, root_version, depth FROM {BLOB} WHERE ")
_INSERT_BLOBS = (f"INSERT INTO {BLOB} (thread_id, checkpoint_ns, channel, version, type, "
                 f"blob, base_version, root_version, depth) VALUES ")
_UPSERT_CHECKPOINT = (
    f"INSERT INTO {CHECKPOINT} (thread_id, checkpoint_ns, checkpoint_id, "
    f"parent_checkpoint_id, run_id, type, checkpoint, metadata) "
    f"VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    f"ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
    f"checkpoint = excluded.checkpoint, type = excluded.type, "
    f"metadata = excluded.metadata, run_id = excluded.run_id")
_INSERT_WRITES = (f"INSERT INTO {WRITE} (thread_id, checkpoint_ns, checkpoint_id, task_id, "
                  f"task_path, idx, channel, type, blob) VALUES ")
_ON_WRITE = " ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) "


def _marks(n: int) -> str:
    return ", ".join(["%s"] * n)


def _rows(using: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _metadata(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def checkpoint(using: str, thread_id: str, ns: str, checkpoint_id: str | None) -> Row | None:
    """One checkpoint row by id, or the latest of the namespace."""
    if checkpoint_id:
        found = _rows(using, _SELECT_CHECKPOINT + " AND checkpoint_id = %s",
                      (thread_id, ns, checkpoint_id))
    else:
        found = _rows(using, _SELECT_CHECKPOINT + " ORDER BY checkpoint_id DESC LIMIT 1",
                      (thread_id, ns))
    if not found:
        return None
    row = found[0]
    return Row(*row[:5], bytes(row[5]), _metadata(row[6]))


def blobs(using: str, where: Sequence[tuple[str, Sequence[Any]]]) -> list[BlobRow]:
    """Blob rows matching any of ``(condition, params)``."""
    sql = _SELECT_BLOBS + " OR ".join(f"({condition})" for condition, _ in where)
    params = [p for _, ps in where for p in ps]
    return [BlobRow(*r[:5], bytes(r[5]) if r[5] is not None else None, *r[6:])
            for r in _rows(using, sql, params)]


def exact_blobs(thread_id: str, ns: str, channels: Sequence[str], versions: Sequence[str]
                ) -> tuple[str, list[Any]]:
    return (f"thread_id = %s AND checkpoint_ns = %s AND channel IN ({_marks(len(channels))})"
            f" AND version IN ({_marks(len(versions))})",
            [thread_id, ns, *channels, *versions])


def chain_blobs(thread_id: str, ns: str, channel: str, root: str, depth: int
                ) -> tuple[str, list[Any]]:
    return ("thread_id = %s AND checkpoint_ns = %s AND channel = %s AND "
            "(version = %s OR (root_version = %s AND depth < %s))",
            [thread_id, ns, channel, root, root, depth])


def writes(using: str, thread_id: str, ns: str, checkpoint_ids: Sequence[str]
           ) -> list[tuple[Any, ...]]:
    """(checkpoint_id, task_id, task_path, idx, channel, type, blob) of these checkpoints."""
    return _rows(using, f"SELECT checkpoint_id, task_id, task_path, idx, channel, type, blob "
                        f"FROM {WRITE} WHERE thread_id = %s AND checkpoint_ns = %s AND "
                        f"checkpoint_id IN ({_marks(len(checkpoint_ids))})",
                 [thread_id, ns, *checkpoint_ids])


def save(using: str, row: tuple[Any, ...], blob_rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert the blobs (kept if already there) and upsert the checkpoint. One statement on
    PostgreSQL; else two, which the caller puts in one transaction."""
    connection = connections[using]
    values = _INSERT_BLOBS + ", ".join([f"({_marks(9)})"] * len(blob_rows))
    blob_params = [p for r in blob_rows for p in r]
    params = [*row[:7], json.dumps(row[7])]
    with connection.cursor() as cursor:
        if not blob_rows:
            cursor.execute(_UPSERT_CHECKPOINT, params)
        elif connection.vendor == "postgresql":
            cursor.execute(f"WITH blobs AS ({values} ON CONFLICT DO NOTHING) "
                           f"{_UPSERT_CHECKPOINT}", [*blob_params, *params])
        else:
            cursor.execute(values + " ON CONFLICT DO NOTHING", blob_params)
            cursor.execute(_UPSERT_CHECKPOINT, params)


def save_writes(using: str, rows: Sequence[tuple[Any, ...]], replace: bool) -> None:
    """Insert a task's writes; ``replace``: a write already there under the same
    (task, idx) takes the new value, else it stays."""
    sql = _INSERT_WRITES + ", ".join([f"({_marks(9)})"] * len(rows)) + _ON_WRITE + (
        "DO UPDATE SET channel = excluded.channel, type = excluded.type, "
        "blob = excluded.blob, task_path = excluded.task_path" if replace else "DO NOTHING")
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [p for r in rows for p in r])
