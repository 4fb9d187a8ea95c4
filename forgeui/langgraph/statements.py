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
_SELECT_BLOBS = (f"SELECT b.thread_id, b.checkpoint_ns, b.channel, b.version, b.type, "
                 f"b.blob, b.base_version, b.root_version, b.depth FROM {BLOB} t "
                 f"JOIN {BLOB} b ON b.thread_id = t.thread_id AND "
                 f"b.checkpoint_ns = t.checkpoint_ns AND b.channel = t.channel WHERE ")
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


def checkpoint(using: str, thread_id: str, ns: str, checkpoint_id: str | None
               ) -> tuple[Row | None, list[tuple[Any, ...]]]:
    """One checkpoint row by id, or the latest of the namespace, and its writes (as
    ``writes`` gives them): one query."""
    if checkpoint_id:
        which, key = "= %s", [checkpoint_id]
    else:
        which, key = (f"= (SELECT max(checkpoint_id) FROM {CHECKPOINT} "
                      f"WHERE thread_id = %s AND checkpoint_ns = %s)"), [thread_id, ns]
    found = _rows(using, (
        f"SELECT 0, checkpoint_id, parent_checkpoint_id, '', type, checkpoint, metadata, 0 "
        f"FROM {CHECKPOINT} WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id "
        f"{which} UNION ALL "
        f"SELECT 1, task_id, task_path, channel, type, blob, NULL, idx FROM {WRITE} "
        f"WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id {which}"),
        [thread_id, ns, *key, thread_id, ns, *key])
    row = next((r for r in found if r[0] == 0), None)
    if row is None:
        return None, []
    writes = [(row[1], w[1], w[2], w[7], w[3], w[4], w[5]) for w in found if w[0] == 1]
    return Row(thread_id, ns, row[1], row[2], row[4], bytes(row[5]), _metadata(row[6])), writes


def blobs(using: str, where: Sequence[tuple[str, Sequence[Any]]]) -> list[BlobRow]:
    """Blob rows ``b`` matching any of ``(condition, params)`` (see ``chained_blobs``); a
    row may come more than once."""
    sql = _SELECT_BLOBS + " OR ".join(f"({condition})" for condition, _ in where)
    params = [p for _, ps in where for p in ps]
    return [BlobRow(*r[:5], bytes(r[5]) if r[5] is not None else None, *r[6:])
            for r in _rows(using, sql, params)]


def chained_blobs(thread_id: str, ns: str, channels: Sequence[str],
                  versions: Sequence[str], segment: int) -> tuple[str, list[Any]]:
    """For ``blobs``: the rows (``t``) of these versions and, for appended parts, the rows
    (``b``) on their way back to the whole copy: the parts since the last segment, the
    segments, the whole copy."""
    return (f"t.thread_id = %s AND t.checkpoint_ns = %s AND "
            f"t.channel IN ({_marks(len(channels))}) AND "
            f"t.version IN ({_marks(len(versions))}) AND (b.version = t.version OR "
            f"(t.base_version <> '' AND (b.version = t.root_version OR "
            f"(b.root_version = t.root_version AND b.depth < t.depth AND "
            f"(b.depth %% %s = 0 OR b.depth >= t.depth - t.depth %% %s)))))",
            [thread_id, ns, *channels, *versions, segment, segment])


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
