"""The hand-written statements of a save, by name, run through ``connection.cursor()``.

A save's writes are known before any of them runs, so they go as one batch
(``write_all``): on PostgreSQL one statement, each write a part of its ``WITH``, so one
round trip; on SQLite, whose statements cost no round trip, one after another. The writes
of one batch touch different rows and none reads what another writes (on PostgreSQL they
all see the statement's one snapshot). Values are adapted by the model fields
themselves (``get_db_prep_save``), so a row written here reads back as the ORM wrote it.
The inbox's event rows are written here too (``events_insert``), by the store's saves and
every other writer alike. Everything else is plain ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connections
from django.db.models import Model

from .interrupts import Interrupt
from .runs import Checkpoint, InterruptStatus, Run, Thread

THREAD, CHECKPOINT, RUN = Thread._meta.db_table, Checkpoint._meta.db_table, Run._meta.db_table
INTERRUPT = Interrupt._meta.db_table


class Write(NamedTuple):
    """One data-modifying statement and its parameters (``%s`` placeholders)."""

    sql: str
    params: Sequence[Any]


def _prep(model: type[Model], using: str, values: dict[str, Any]) -> list[Any]:
    connection = connections[using]
    return [model._meta.get_field(name).get_db_prep_save(value, connection)
            for name, value in values.items()]


def write_all(using: str, writes: Sequence[Write]) -> list[int]:
    """Run ``writes`` in the current transaction; how many rows each one touched."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and len(writes) > 1:
            parts = ", ".join(f"w{n} AS ({w.sql} RETURNING 1)" for n, w in enumerate(writes))
            counts = ", ".join(f"(SELECT count(*) FROM w{n})" for n in range(len(writes)))
            cursor.execute(f"WITH {parts} SELECT {counts}",
                           [p for w in writes for p in w.params])
            return [int(n) for n in cursor.fetchone()]
        touched = []
        for w in writes:
            cursor.execute(w.sql, w.params)
            touched.append(cursor.rowcount)
        return touched


def thread_seq(using: str, thread_id: str, latest_id: str) -> int | None:
    """The thread's position while ``latest_id`` is its latest checkpoint, else None."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT seq FROM {THREAD} WHERE thread_id = %s"
                       " AND latest_checkpoint_id = %s AND NOT deleted", [thread_id, latest_id])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def thread_insert(using: str, thread_id: str, latest_id: str, head: str,
                  head_seq: int) -> Write:
    """A thread's first checkpoint; a taken thread id is an ``IntegrityError``."""
    params = _prep(Thread, using, {"thread_id": thread_id, "latest_checkpoint_id": latest_id,
                                   "head": head, "head_seq": head_seq, "deleted": False})
    return Write(f"INSERT INTO {THREAD} (thread_id, latest_checkpoint_id, seq, head,"
                 " head_seq, deleted) VALUES (%s, %s, 1, %s, %s, %s)", params)


def thread_move(thread_id: str, parent_id: str, latest_id: str, seq: int,
                head: str | None) -> Write:
    """The compare-and-set: touches the thread's row only while ``parent_id`` is its
    latest. ``head``: the head the row keeps from now on (None: the one it kept)."""
    if head is None:
        return Write(f"UPDATE {THREAD} SET latest_checkpoint_id = %s, seq = %s"
                     " WHERE thread_id = %s AND latest_checkpoint_id = %s AND NOT deleted",
                     [latest_id, seq, thread_id, parent_id])
    return Write(f"UPDATE {THREAD} SET latest_checkpoint_id = %s, seq = %s, head = %s,"
                 " head_seq = %s WHERE thread_id = %s AND latest_checkpoint_id = %s"
                 " AND NOT deleted", [latest_id, seq, head, seq, thread_id, parent_id])


def kept_heads_clear(thread_id: str) -> Write:
    """The large head a thread's checkpoint row kept goes when a newer one is kept."""
    return Write(f"UPDATE {CHECKPOINT} SET head = '' WHERE thread_id = %s"
                 " AND head <> ''", [thread_id])


CHECKPOINT_COLUMNS = ("id", "thread_id", "seq", "run_id", "parent_id", "base_id", "node",
                      "status", "step", "created_at", "record", "head")


def checkpoint_insert(using: str, values: dict[str, Any]) -> Write:
    """One checkpoint row; ``values`` has every one of ``CHECKPOINT_COLUMNS``."""
    params = _prep(Checkpoint, using, {name: values[name] for name in CHECKPOINT_COLUMNS})
    return Write(f"INSERT INTO {CHECKPOINT} ({', '.join(CHECKPOINT_COLUMNS)})"
                 f" VALUES ({', '.join(['%s'] * len(CHECKPOINT_COLUMNS))})", params)


# What a later checkpoint of a run can change. Its thread, tree, graph and place are fixed
# when the row is made (a fork makes new run ids); input, started_by and created_at keep
# the values of the run's first checkpoint.
RUN_MOVED = ("status", "output", "error", "latest_checkpoint_id", "updated_at")
RUN_COLUMNS = ("run_id", "thread_id", "root_thread_id", "parent_run_id", "graph",
               "namespace", "sub_agent_id", "input", "started_by_id", "created_at",
               *RUN_MOVED)


def run_move(using: str, run_id: str, moved: dict[str, Any]) -> Write:
    """Move an existing run row; touches nothing if the row is not there."""
    params = _prep(Run, using, {name: moved[name] for name in RUN_MOVED})
    sets = ", ".join(f"{name} = %s" for name in RUN_MOVED)
    return Write(f"UPDATE {RUN} SET {sets} WHERE run_id = %s", [*params, run_id])


def run_upsert(using: str, values: dict[str, Any]) -> Write:
    """Make the run's row, or move it if it is there."""
    params = _prep(Run, using, {name: values[name] for name in RUN_COLUMNS})
    sets = ", ".join(f"{name} = excluded.{name}" for name in RUN_MOVED)
    return Write(f"INSERT INTO {RUN} ({', '.join(RUN_COLUMNS)})"
                 f" VALUES ({', '.join(['%s'] * len(RUN_COLUMNS))})"
                 f" ON CONFLICT (run_id) DO UPDATE SET {sets}", params)


def interrupts_insert(using: str, rows: Sequence[Interrupt]) -> Write:
    """Interrupt rows, each unless its id is taken (it touches only the rows it made)."""
    connection = connections[using]
    fields = [f for f in Interrupt._meta.get_fields() if f.concrete]
    columns = ", ".join(f'"{f.column}"' for f in fields)
    values = ", ".join(f"({', '.join(['%s'] * len(fields))})" for _ in rows)
    params = [f.get_db_prep_save(getattr(row, f.attname), connection)
              for row in rows for f in fields]
    return Write(f"INSERT INTO {INTERRUPT} ({columns}) VALUES {values}"
                 " ON CONFLICT (id) DO NOTHING", params)


def interrupts_at(ids: Sequence[str], checkpoint_id: str) -> Write:
    """Pending interrupts are answered against the run's latest checkpoint."""
    marks = ", ".join(["%s"] * len(ids))
    return Write(f"UPDATE {INTERRUPT} SET checkpoint_id = %s WHERE id IN ({marks})",
                 [checkpoint_id, *ids])


def interrupt_close(using: str, interrupt_id: str, status: str, answered_at: datetime) -> Write:
    """Close a pending interrupt; touches nothing if it is no longer pending."""
    params = _prep(Interrupt, using, {"status": status, "answered_at": answered_at})
    return Write(f"UPDATE {INTERRUPT} SET status = %s, answered_at = %s"
                 " WHERE id = %s AND status = %s",
                 [*params, interrupt_id, InterruptStatus.PENDING.value])


# Serialises event writers until they commit, so event ids become visible in id order.
EVENT_ORDER_LOCK = 0x666F726765  # "forge"
EVENT_COLUMNS = ("kind", "interrupt_id", "run_id", "root_thread_id", "data", "created_at")


def events_insert(using: str, rows: Sequence[Model]) -> list[int]:
    """Event rows (unsaved ``Event`` instances); their ids, in row order. On PostgreSQL
    the statement takes the event-ordering lock before it draws an id: each row it
    inserts is joined to the lock's one row."""
    connection = connections[using]
    table = rows[0]._meta.db_table  # Event's: that module imports this one
    fields = [rows[0]._meta.get_field(name) for name in EVENT_COLUMNS]
    columns = ", ".join(EVENT_COLUMNS)
    values = [[f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields]
              for row in rows]
    if connection.vendor == "postgresql":
        marks = ", ".join(f"({', '.join(['%s'] * (len(EVENT_COLUMNS) + 1))})" for _ in rows)
        sql = (f"WITH event_order AS MATERIALIZED (SELECT pg_advisory_xact_lock(%s))"
               f" INSERT INTO {table} ({columns}) SELECT {columns}"
               f" FROM event_order, (VALUES {marks}) AS v(n, {columns}) ORDER BY n"
               f" RETURNING id")
        params = [EVENT_ORDER_LOCK, *(p for n, row in enumerate(values) for p in (n, *row))]
    else:  # one writer at a time already: the database's write lock
        marks = ", ".join(f"({', '.join(['%s'] * len(EVENT_COLUMNS))})" for _ in rows)
        sql = f"INSERT INTO {table} ({columns}) VALUES {marks} RETURNING id"
        params = [p for row in values for p in row]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        # Ids are drawn in row order; RETURNING's own order is not promised.
        return sorted(int(row[0]) for row in cursor.fetchall())
