"""The hand-written statements of a save, by name, run through ``connection.cursor()``.

A save's writes are known before any of them runs. On PostgreSQL they go as one
statement (``save_all``), each write a part of its ``WITH`` and the inbox events the save
deserves with them, so a save is one round trip: one statement, which outside a caller's
transaction is its own transaction (no ``BEGIN``, no ``COMMIT`` to wait for). There every
write after the first touches nothing unless the first, the thread's compare-and-set,
moved the row (``Write.guarded``), so a lost compare-and-set writes nothing. On SQLite,
whose statements cost no round trip, they run one after another (``write_all``) and the
events after them. The writes of one save touch different rows and none reads what
another writes (on PostgreSQL they all see the statement's one snapshot). Values are
adapted by the model fields themselves (``get_db_prep_save``), so a row written here
reads back as the ORM wrote it. The inbox's event rows are written here too
(``events_insert``) by every other writer. Everything else is plain ORM.
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


# Inside a save's one statement: the save's first write, the compare-and-set, moved the row.
MOVED = "EXISTS (SELECT FROM w0)"


class Write(NamedTuple):
    """One data-modifying statement and its parameters (``%s`` placeholders).
    ``guarded``: the same write as a part of a save's one statement (``save_all``), where
    it touches nothing unless the thread's row moved ("": the same as ``sql``)."""

    sql: str
    params: Sequence[Any]
    guarded: str = ""


def _prep(model: type[Model], using: str, values: dict[str, Any]) -> list[Any]:
    connection = connections[using]
    return [model._meta.get_field(name).get_db_prep_save(value, connection)
            for name, value in values.items()]


def _cast(field: Any, connection: Any) -> str:
    """A placeholder typed as the column: a ``VALUES`` list in a ``FROM`` would otherwise
    take an untyped value (a NULL, a string for a JSON column) for text."""
    return f"CAST(%s AS {field.db_type(connection)})"


def one_statement(using: str) -> bool:
    """Does a save go as one statement (``save_all``) on this database?"""
    return bool(connections[using].vendor == "postgresql")


def write_all(using: str, writes: Sequence[Write]) -> list[int]:
    """Run ``writes`` one after another in the current transaction; how many rows each
    one touched."""
    touched = []
    with connections[using].cursor() as cursor:
        for w in writes:
            cursor.execute(w.sql, w.params)
            touched.append(cursor.rowcount)
    return touched


def save_all(using: str, writes: Sequence[Write],
             events: Sequence[tuple[Model, Sequence[int]]]) -> tuple[list[int], list[int]]:
    """PostgreSQL: a save's ``writes`` (the first its compare-and-set) and its event rows
    (unsaved ``Event`` instances, each with the writes one of which must touch a row for
    it to be written; none: always) as one statement. How many rows each write touched,
    and the ids of the events written, in row order.

    The event-ordering lock is taken after every write has run (it reads their counts),
    so a save holding it waits for nothing but its commit, as when the events were a
    statement of their own after the writes; and before an id is drawn."""
    connection = connections[using]
    parts = [f"w{n} AS ({w.guarded or w.sql} RETURNING 1)" for n, w in enumerate(writes)]
    params = [p for w in writes for p in w.params]
    counts = ", ".join(f"(SELECT count(*) FROM w{n}) AS n{n}" for n in range(len(writes)))
    if not events:
        with connection.cursor() as cursor:
            cursor.execute(f"WITH {', '.join(parts)} SELECT {counts}", params)
            return [int(n) for n in cursor.fetchone()], []
    table = events[0][0]._meta.db_table  # Event's: that module imports this one
    fields = [events[0][0]._meta.get_field(name) for name in EVENT_COLUMNS]
    wanted = [" OR ".join(f"n{k} > 0" for k in when) or "TRUE" for _, when in events]
    row = f"(%s, {', '.join(_cast(f, connection) for f in fields)})"
    parts += [f"touched AS MATERIALIZED (SELECT {counts})",
              "event_order AS MATERIALIZED (SELECT pg_advisory_xact_lock(%s) FROM touched"
              f" WHERE n0 > 0 AND ({' OR '.join(wanted)}))",
              f"events AS (INSERT INTO {table} ({', '.join(EVENT_COLUMNS)})"
              f" SELECT {', '.join(EVENT_COLUMNS)} FROM event_order, touched,"
              f" (VALUES {', '.join([row] * len(events))}) AS v(n, {', '.join(EVENT_COLUMNS)})"
              f" WHERE CASE n {' '.join(f'WHEN {n} THEN {w}' for n, w in enumerate(wanted))}"
              " END ORDER BY n RETURNING id)"]
    params.append(EVENT_ORDER_LOCK)
    params += [p for n, (event, _) in enumerate(events) for p in
               (n, *(f.get_db_prep_save(getattr(event, f.attname), connection) for f in fields))]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT touched.*,"
                       " ARRAY(SELECT id FROM events ORDER BY id) FROM touched", params)
        *touched, ids = cursor.fetchone()
    return [int(n) for n in touched], [int(i) for i in ids]


def thread_seq(using: str, thread_id: str, latest_id: str) -> int | None:
    """The thread's position while ``latest_id`` is its latest checkpoint, else None."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT seq FROM {THREAD} WHERE thread_id = %s"
                       " AND latest_checkpoint_id = %s AND NOT deleted", [thread_id, latest_id])
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def thread_head(using: str, thread_id: str) -> tuple[str, str, int, int] | None:
    """What a load reads first: the thread's latest checkpoint id, the head its row keeps
    ("" for none or a large one), its position, and the position of the head it last
    kept whole (0: none). None for an unknown or deleted thread."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT latest_checkpoint_id, head, seq, head_seq FROM {THREAD}"
                       " WHERE thread_id = %s AND NOT deleted", [thread_id])
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1], int(row[2]), int(row[3]))


def run_latest(using: str, run_id: str) -> tuple[str, str] | None:
    """The thread and latest checkpoint id of a run: read at every start and resume."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT thread_id, latest_checkpoint_id FROM {RUN} WHERE run_id = %s",
                       [run_id])
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1])


def thread_records(using: str, thread_id: str, first: int, last: int) -> list[tuple[str, str]]:
    """The kept head ("" where none) and the record of each of the thread's checkpoints
    at positions ``first`` to ``last``, in order."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT head, record FROM {CHECKPOINT} WHERE thread_id = %s"
                       " AND seq >= %s AND seq <= %s ORDER BY seq", [thread_id, first, last])
        return [(head, record) for head, record in cursor.fetchall()]


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
    sql = f"UPDATE {CHECKPOINT} SET head = '' WHERE thread_id = %s AND head <> ''"
    return Write(sql, [thread_id], f"{sql} AND {MOVED}")


CHECKPOINT_COLUMNS = ("id", "thread_id", "seq", "run_id", "parent_id", "base_id", "node",
                      "status", "step", "created_at", "record", "head")


def checkpoint_insert(using: str, values: dict[str, Any]) -> Write:
    """One checkpoint row; ``values`` has every one of ``CHECKPOINT_COLUMNS``."""
    params = _prep(Checkpoint, using, {name: values[name] for name in CHECKPOINT_COLUMNS})
    into = f"INSERT INTO {CHECKPOINT} ({', '.join(CHECKPOINT_COLUMNS)})"
    marks = ", ".join(["%s"] * len(CHECKPOINT_COLUMNS))
    return Write(f"{into} VALUES ({marks})", params, f"{into} SELECT {marks} WHERE {MOVED}")


# What a later checkpoint of a run can change. Its thread, tree, graph and place are fixed
# when the row is made (a fork makes new run ids); input, started_by and created_at keep
# the values of the run's first checkpoint.
RUN_MOVED = ("status", "output", "error", "latest_checkpoint_id", "updated_at")
RUN_COLUMNS = ("run_id", "thread_id", "root_thread_id", "parent_run_id", "graph",
               "namespace", "sub_agent_id", "input", "started_by_id", "created_at", "team",
               *RUN_MOVED)


def run_move(using: str, run_id: str, moved: dict[str, Any]) -> Write:
    """Move an existing run row; touches nothing if the row is not there."""
    params = _prep(Run, using, {name: moved[name] for name in RUN_MOVED})
    sets = ", ".join(f"{name} = %s" for name in RUN_MOVED)
    sql = f"UPDATE {RUN} SET {sets} WHERE run_id = %s"
    return Write(sql, [*params, run_id], f"{sql} AND {MOVED}")


def run_upsert(using: str, values: dict[str, Any]) -> Write:
    """Make the run's row, or move it if it is there."""
    params = _prep(Run, using, {name: values[name] for name in RUN_COLUMNS})
    sets = ", ".join(f"{name} = excluded.{name}" for name in RUN_MOVED)
    into = f"INSERT INTO {RUN} ({', '.join(RUN_COLUMNS)})"
    marks = ", ".join(["%s"] * len(RUN_COLUMNS))
    upsert = f"ON CONFLICT (run_id) DO UPDATE SET {sets}"
    return Write(f"{into} VALUES ({marks}) {upsert}", params,
                 f"{into} SELECT {marks} WHERE {MOVED} {upsert}")


def interrupts_insert(using: str, rows: Sequence[Interrupt]) -> Write:
    """Interrupt rows, each unless its id is taken (it touches only the rows it made)."""
    connection = connections[using]
    fields = [f for f in Interrupt._meta.get_fields() if f.concrete]
    columns = ", ".join(f'"{f.column}"' for f in fields)
    into = f"INSERT INTO {INTERRUPT} ({columns})"
    values = ", ".join(f"({', '.join(['%s'] * len(fields))})" for _ in rows)
    params = [f.get_db_prep_save(getattr(row, f.attname), connection)
              for row in rows for f in fields]
    guarded = ""
    if connection.vendor == "postgresql":
        typed = f"({', '.join(_cast(f, connection) for f in fields)})"
        guarded = (f"{into} SELECT * FROM (VALUES {', '.join([typed] * len(rows))}) AS v"
                   f" WHERE {MOVED} ON CONFLICT (id) DO NOTHING")
    return Write(f"{into} VALUES {values} ON CONFLICT (id) DO NOTHING", params, guarded)


def interrupts_at(ids: Sequence[str], checkpoint_id: str) -> Write:
    """Pending interrupts are answered against the run's latest checkpoint."""
    marks = ", ".join(["%s"] * len(ids))
    sql = f"UPDATE {INTERRUPT} SET checkpoint_id = %s WHERE id IN ({marks})"
    return Write(sql, [checkpoint_id, *ids], f"{sql} AND {MOVED}")


def interrupt_close(using: str, interrupt_id: str, status: str, answered_at: datetime) -> Write:
    """Close a pending interrupt; touches nothing if it is no longer pending."""
    params = _prep(Interrupt, using, {"status": status, "answered_at": answered_at})
    sql = f"UPDATE {INTERRUPT} SET status = %s, answered_at = %s WHERE id = %s AND status = %s"
    return Write(sql, [*params, interrupt_id, InterruptStatus.PENDING.value],
                 f"{sql} AND {MOVED}")


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
