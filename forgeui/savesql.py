"""The statements of a planned save (``saveplan.SavePlan``), built once per shape.

PostgreSQL: the whole save is one statement of data-modifying CTEs, so outside a
transaction it is one round trip that commits itself: the compare-and-set on the thread
row (``moved``) gates every other write, since each reads ``moved``; a lost
compare-and-set writes nothing and returns no row. The event rows take the ordering lock
(``events.EVENT_ORDER_LOCK``) before drawing ids, and hold it until the commit.

SQLite runs in-process, so a round trip costs nothing but Python: the same writes are a
few statements on the raw connection. On both, values are adapted the way the ORM would,
with each column's adapter looked up once (``fast_values``; a test holds them equal to
``fastsql.prepare``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import (
    BooleanField,
    CharField,
    DateTimeField,
    ForeignKey,
    IntegerField,
    JSONField,
    Model,
    TextField,
)
from psycopg.types.json import Jsonb

from . import fastsql, unwaited
from .events import EVENT_COLUMNS, EVENT_ORDER_LOCK, EventDraft
from .models import Checkpoint, Event, Interrupt, InterruptStatus, Run, Thread
from .saveplan import SavePlan
from .sync import RUN_UPDATE_FIELDS

Row = dict[str, Any]
_AS_IS = (CharField, TextField, IntegerField, BooleanField, ForeignKey)
_statements: dict[tuple[Any, ...], str] = {}
_adapters: dict[tuple[Any, ...], list[Callable[[Any], Any]]] = {}


@dataclass(frozen=True, slots=True)
class DumpedJson:
    """A JSON column's value already dumped (the checkpoint's, which the store also
    remembers: ``recent``), sent as it is rather than dumped again."""

    text: str


def _as_is(text: str) -> str:
    return text


def event_row(draft: EventDraft, now: Any) -> Row:
    return {"kind": draft.kind, "run_id": draft.run_id, "root_thread_id": draft.root_thread_id,
            "interrupt_id": draft.interrupt_id, "data": draft.data, "created_at": now}


def _table(model: type[Model]) -> str:
    return fastsql.quote(model._meta.db_table)


def _cols(model: type[Model], names: Sequence[str]) -> str:
    return ", ".join(fastsql.columns(model, names))


# -- PostgreSQL: one statement ----------------------------------------------------------

def postgres_statement(plan: SavePlan, cp_row: Row, run_row: Row, now: Any,
                       connection: BaseDatabaseWrapper, unwait: bool = False,
                       ) -> tuple[str, list[Any]]:
    """The save as one statement; it returns ``(seq, event ids, run row written)``, or no
    row if lost. ``unwait``: its commit does not wait for the disk (``unwaited``;
    autocommit only)."""
    cp = plan.cp
    first = cp.parent_id is None
    created_names = tuple(plan.created[0]) if plan.created else ()
    run_values = run_change(run_row) if plan.run_row_exists else run_row
    shape = ("pg", first, tuple(cp_row), tuple(run_values), plan.run_row_exists,
             created_names, len(plan.created), len(plan.kept), len(plan.closing),
             len(plan.events), None if plan.run_event is None else plan.run_event_always,
             unwait)
    sql = _statements.get(shape)
    if sql is None:
        sql = _statements[shape] = _postgres_sql(plan, cp_row, run_values, created_names,
                                                 connection, unwait)
    prep = fast_values
    params: list[Any] = [cp.thread_id, cp.id] if first else [cp.id, cp.thread_id, cp.parent_id]
    params += prep(Checkpoint, cp_row, connection) + prep(Run, run_values, connection)
    for row in plan.created:
        params += prep(Interrupt, row, connection)
    if plan.kept:
        params += [cp.id, *plan.kept]
    answered_at = Interrupt._meta.get_field("answered_at")
    for closing in plan.closing:
        params += [closing.status,
                   answered_at.get_db_prep_save(closing.answered_at, connection=connection),
                   closing.interrupt_id, InterruptStatus.PENDING]
    drafts = [*plan.events, *(c.event for c in plan.closing)]
    if plan.run_event is not None:
        drafts.append(plan.run_event)
    for draft in drafts:
        params += prep(Event, event_row(draft, now), connection)
    return sql, params


def _postgres_sql(plan: SavePlan, cp_row: Row, run_row: Row, created_names: tuple[str, ...],
                  connection: BaseDatabaseWrapper, unwait: bool) -> str:
    moved = "EXISTS (SELECT 1 FROM moved)"
    parts = [
        f"moved AS ({fastsql.advance_sql(Thread._meta.db_table, plan.cp.parent_id is None)})",
        f"saved AS (INSERT INTO {_table(Checkpoint)} ({_cols(Checkpoint, (*cp_row, 'seq'))}) "
        f"SELECT {fastsql.casts(Checkpoint, tuple(cp_row), connection)}, moved.seq FROM moved)",
        f"mirrored AS ({_postgres_run_write(plan, run_row, connection)} RETURNING 1)",
    ]
    if plan.created:
        one = f"({fastsql.casts(Interrupt, created_names, connection)})"
        rows = ", ".join([one] * len(plan.created))
        parts.append(f"created AS (INSERT INTO {_table(Interrupt)} "
                     f"({_cols(Interrupt, created_names)}) SELECT v.* FROM moved, "
                     f"(VALUES {rows}) AS v ON CONFLICT DO NOTHING)")
    if plan.kept:
        parts.append(f"kept AS (UPDATE {_table(Interrupt)} SET checkpoint_id = %s WHERE id IN "
                     f"({', '.join(['%s'] * len(plan.kept))}) AND {moved})")
    answered_at = Interrupt._meta.get_field("answered_at").db_type(connection)
    for i in range(len(plan.closing)):
        parts.append(f"closed{i} AS (UPDATE {_table(Interrupt)} SET status = %s, "
                     f"answered_at = CAST(%s AS {answered_at}) WHERE id = %s AND status = %s "
                     f"AND {moved} RETURNING 1)")
    row = f"SELECT {fastsql.casts(Event, EVENT_COLUMNS, connection)}"
    selects = [row] * len(plan.events)
    selects += [f"{row} WHERE EXISTS (SELECT 1 FROM closed{i})" for i in range(len(plan.closing))]
    if plan.run_event is not None:
        any_closed = " UNION ALL ".join(f"SELECT 1 FROM closed{i}"
                                        for i in range(len(plan.closing)))
        selects.append(row if plan.run_event_always else f"{row} WHERE EXISTS ({any_closed})")
    ids = "ARRAY[]::bigint[]"
    if selects:
        # The lock's one row joins every event row, so it is held before any id is drawn.
        parts += [f"ordered AS MATERIALIZED (SELECT pg_advisory_xact_lock({EVENT_ORDER_LOCK:d})"
                  " FROM moved)",
                  f"events AS (INSERT INTO {_table(Event)} ({_cols(Event, EVENT_COLUMNS)}) "
                  f"SELECT e.* FROM ordered, ({' UNION ALL '.join(selects)}) AS e RETURNING id)"]
        ids = "ARRAY(SELECT id FROM events ORDER BY id)"
    sources = f"moved, {unwaited.POSTGRES_JOIN}" if unwait else "moved"
    return (f"WITH {', '.join(parts)} SELECT moved.seq, {ids},"
            f" EXISTS (SELECT 1 FROM mirrored) FROM {sources}")


def _postgres_run_write(plan: SavePlan, run_row: Row, connection: BaseDatabaseWrapper) -> str:
    """The run row's write, reading the moved thread row (nothing if the save is lost)."""
    if plan.run_row_exists:  # the values: ``run_change``
        return (f"{fastsql.update_sql(Run, RUN_UPDATE_FIELDS, 'run_id')}"
                " AND EXISTS (SELECT 1 FROM moved)")
    names = tuple(run_row)
    return (f"INSERT INTO {_table(Run)} ({_cols(Run, names)}) "
            f"SELECT {fastsql.casts(Run, names, connection)} FROM moved"
            f"{fastsql.upsert_tail(Run, 'run_id', RUN_UPDATE_FIELDS)}")


def run_change(run_row: Row) -> Row:
    """Of a run row, what a later checkpoint of the run changes, then the run's id: the
    values of ``fastsql.update_sql(Run, RUN_UPDATE_FIELDS, "run_id")``, in its order."""
    return {**{name: run_row[name] for name in RUN_UPDATE_FIELDS}, "run_id": run_row["run_id"]}


# -- Values, as the ORM would send them --------------------------------------------

def fast_values(model: type[Model], values: Row, connection: BaseDatabaseWrapper) -> list[Any]:
    """``fastsql.prepare``, with each column's adapter looked up once (and ``DumpedJson``
    taken as it is)."""
    key = (connection.alias, model, tuple(values))
    adapters = _adapters.get(key)
    if adapters is None:
        adapters = _adapters[key] = [_adapter(model._meta.get_field(name), connection)
                                     for name in values]
    return [adapt(value) for adapt, value in zip(adapters, values.values(), strict=True)]


def _adapter(field: Any, connection: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    if isinstance(field, JSONField):
        encoder = field.encoder
        if connection.vendor == "postgresql":
            adapt_json = connection.ops.adapt_json_value
            return lambda v: None if v is None else Jsonb(v.text, dumps=_as_is) \
                if type(v) is DumpedJson else adapt_json(v, encoder)
        return lambda v: None if v is None else v.text if type(v) is DumpedJson \
            else json.dumps(v, cls=encoder)
    if isinstance(field, DateTimeField):
        if connection.vendor == "postgresql":
            # psycopg sends an aware datetime as it is (so does the ORM); others the ORM's way.
            return lambda v: v if type(v) is datetime and v.tzinfo is not None else (
                field.get_db_prep_save(v, connection=connection))
        return _datetime_adapter(connection)
    if isinstance(field, _AS_IS):
        # Strings, numbers, booleans and ids go to sqlite3 as they are; others are
        # converted the ORM's way.
        return lambda v: v if v is None or type(v) in (str, int, bool) else (
            field.get_db_prep_save(v, connection=connection))
    return lambda v: field.get_db_prep_save(v, connection=connection)


def _datetime_adapter(connection: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    """The ORM's adapter, with a shortcut for the datetimes a save makes (aware, UTC, and
    a UTC connection: making them naive is dropping the zone, and the ORM's text of a
    naive datetime is its ISO form with a space, which for UTC ends in "+00:00")."""
    adapt: Callable[[Any], Any] = connection.ops.adapt_datetimefield_value
    if not settings.USE_TZ or connection.timezone is not UTC:
        return adapt
    return lambda v: v.isoformat(" ")[:-6] if type(v) is datetime and v.tzinfo is UTC \
        else adapt(v)


# -- SQLite: a few statements on the raw connection -------------------------------------

def _sqlite(key: tuple[Any, ...], build: Callable[[], str]) -> str:
    sql = _statements.get(key)
    if sql is None:
        sql = _statements[key] = build().replace("%s", "?")
    return sql


def sqlite_writes(plan: SavePlan, cp_row: Row, run_row: Row, now: Any, cursor: Any,
                  connection: BaseDatabaseWrapper) -> tuple[int, list[int]] | None:
    """Run the save's statements on ``cursor`` (a raw ``sqlite3`` cursor, inside a
    transaction); ``(seq, event ids)``, or None when the compare-and-set is lost."""
    cp = plan.cp
    first = cp.parent_id is None
    cursor.execute(_sqlite(("sq-advance", first),
                           lambda: fastsql.advance_sql(Thread._meta.db_table, first)),
                   (cp.thread_id, cp.id) if first else (cp.id, cp.thread_id, cp.parent_id))
    moved = cursor.fetchone()
    if moved is None:
        return None
    seq = int(moved[0])
    cursor.execute(_sqlite(("sq-cp", tuple(cp_row)), lambda: fastsql.insert_sql(
        Checkpoint, (*cp_row, "seq"), None, ())),
        [*fast_values(Checkpoint, cp_row, connection), seq])
    if plan.run_row_exists:
        cursor.execute(_sqlite(("sq-run-change",), lambda: fastsql.update_sql(
            Run, RUN_UPDATE_FIELDS, "run_id")), fast_values(Run, run_change(run_row), connection))
    if not plan.run_row_exists or not cursor.rowcount:  # a row deleted meanwhile: make it
        cursor.execute(_sqlite(("sq-run", tuple(run_row)), lambda: fastsql.insert_sql(
            Run, tuple(run_row), "run_id", RUN_UPDATE_FIELDS)),
            fast_values(Run, run_row, connection))
    if plan.created:
        names = tuple(plan.created[0])
        sql = _sqlite(("sq-created", names, len(plan.created)), lambda: (
            f"INSERT INTO {_table(Interrupt)} ({_cols(Interrupt, names)}) VALUES "
            + ", ".join([f"({', '.join(['%s'] * len(names))})"] * len(plan.created))
            + " ON CONFLICT DO NOTHING"))
        cursor.execute(sql, [v for row in plan.created
                             for v in fast_values(Interrupt, row, connection)])
    if plan.kept:
        cursor.execute(_sqlite(("sq-kept", len(plan.kept)), lambda: (
            f"UPDATE {_table(Interrupt)} SET checkpoint_id = %s WHERE id IN "
            f"({', '.join(['%s'] * len(plan.kept))})")), [cp.id, *plan.kept])
    drafts = list(plan.events)
    for closing in plan.closing:
        cursor.execute(_sqlite(("sq-close",), lambda: (
            f"UPDATE {_table(Interrupt)} SET status = %s, answered_at = %s "
            "WHERE id = %s AND status = %s")),
            (closing.status, connection.ops.adapt_datetimefield_value(closing.answered_at),
             closing.interrupt_id, InterruptStatus.PENDING))
        if cursor.rowcount:
            drafts.append(closing.event)
    if plan.run_event is not None and (plan.run_event_always or len(drafts) > len(plan.events)):
        drafts.append(plan.run_event)
    if not drafts:
        return seq, []
    sql = _sqlite(("sq-events", len(drafts)), lambda: (
        f"INSERT INTO {_table(Event)} ({_cols(Event, EVENT_COLUMNS)}) VALUES "
        + ", ".join([f"({', '.join(['%s'] * len(EVENT_COLUMNS))})"] * len(drafts))
        + " RETURNING id"))
    cursor.execute(sql, [v for d in drafts for v in fast_values(Event, event_row(d, now),
                                                                connection)])
    return seq, sorted(row[0] for row in cursor.fetchall())
