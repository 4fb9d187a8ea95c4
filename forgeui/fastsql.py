"""Statements for the checkpoint store's hot path, built once.

A save runs a few statements per step of every run. The ORM compiles each one afresh,
which costs more than the database's own work; here the SQL is built once per model,
column set and vendor, and values still go through each field's ``get_db_prep_save``,
exactly as the ORM would send them.

On PostgreSQL a save's compare-and-set, checkpoint row and ``Run`` upsert are one
statement (data-modifying CTEs: ``advance_and_insert``), and the event ordering lock is
taken by the event insert itself (``insert_events``): each round trip saved is a wait
for the server. SQLite has no data-modifying CTEs, so it runs them one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import psycopg
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Model

_statements: dict[tuple[Any, ...], str] = {}
NEVER = 2**31  # a prepare threshold no query reaches

try:  # psycopg's own query conversion, to cache it per statement (``_SaveQuery``)
    from psycopg._queries import PostgresQuery
except ImportError:  # pragma: no cover - a psycopg that moved them: convert as it does
    PostgresQuery = None  # type: ignore[assignment,misc]


if PostgresQuery is not None:
    _converted: dict[tuple[Any, str], Any] = {}

    class _SaveQuery(PostgresQuery):
        """psycopg's conversion of ``%s`` placeholders to ``$n``, kept per statement.

        psycopg caches it only for statements under 4 KB and 50 values, which a save
        with interrupts and events outgrows; it then splits the statement with a regular
        expression on every call, about a sixth of a run's start on PostgreSQL. The
        statements here are few (one per save shape), so each is converted once.
        """

        __slots__ = ()

        def convert(self, query: Any, vars: Any) -> None:
            key = (query, self._tx.encoding)
            done = _converted.get(key)
            if done is None or vars is None:
                super().convert(query, vars)
                if vars is not None:
                    _converted[key] = (self.query, self._want_formats, self._order,
                                       self._parts)
                return
            self.query, self._want_formats, self._order, self._parts = done
            self.dump(vars)

    class SaveCursor(psycopg.Cursor[Any]):
        """A cursor for the store's own statements (``_SaveQuery``)."""

        _query_cls = _SaveQuery
else:  # pragma: no cover
    SaveCursor = psycopg.Cursor  # type: ignore[misc,assignment]


def _cached(key: tuple[Any, ...], build: Callable[[], str]) -> str:
    sql = _statements.get(key)
    if sql is None:
        sql = _statements[key] = build()
    return sql


def quote(name: str) -> str:
    return connections["default"].ops.quote_name(name)


def columns(model: type[Model], names: Sequence[str]) -> list[str]:
    return [quote(model._meta.get_field(n).column) for n in names]


def casts(model: type[Model], names: Sequence[str], connection: BaseDatabaseWrapper) -> str:
    """Typed placeholders, for values read through a ``SELECT`` rather than ``VALUES``."""
    fields = [model._meta.get_field(n) for n in names]
    return ", ".join(f"CAST(%s AS {f.db_type(connection)})" for f in fields)


def upsert_tail(model: type[Model], conflict: str, update: Sequence[str]) -> str:
    target = quote(model._meta.get_field(conflict).column)
    sets = ", ".join(f"{c} = excluded.{c}" for c in columns(model, update))
    return f" ON CONFLICT ({target}) DO UPDATE SET {sets}"


def insert_sql(model: type[Model], names: tuple[str, ...], conflict: str | None,
                update: tuple[str, ...]) -> str:
    sql = (f"INSERT INTO {quote(model._meta.db_table)} "
           f"({', '.join(columns(model, names))}) VALUES ({', '.join(['%s'] * len(names))})")
    return sql + (upsert_tail(model, conflict, update) if conflict is not None else "")


def update_sql(model: type[Model], names: Sequence[str], key: str) -> str:
    """``UPDATE`` the row whose ``key`` = %s, setting ``names`` (their values first)."""
    return (f"UPDATE {quote(model._meta.db_table)} SET {_sets(model, names)}"
            f" WHERE {columns(model, (key,))[0]} = %s")


def _sets(model: type[Model], names: Sequence[str]) -> str:
    return ", ".join(f"{c} = %s" for c in columns(model, names))


def prepare(model: type[Model], values: dict[str, Any],
            connection: BaseDatabaseWrapper) -> list[Any]:
    """Each value as the ORM would send it."""
    get = model._meta.get_field
    return [get(name).get_db_prep_save(value, connection=connection)
            for name, value in values.items()]


def insert(model: type[Model], values: dict[str, Any], using: str,
           conflict: str | None = None, update: Sequence[str] = ()) -> None:
    """``INSERT`` one row (``ON CONFLICT (conflict) DO UPDATE SET update...`` if given)."""
    connection = connections[using]
    names, update = tuple(values), tuple(update)
    sql = _cached(("insert", model, names, conflict, update, connection.vendor),
                  lambda: insert_sql(model, names, conflict, update))
    with connection.cursor() as cursor:
        cursor.execute(sql, prepare(model, values, connection))


def advance_sql(table: str, first: bool) -> str:
    """The compare-and-set on the thread row, returning the new checkpoint's position."""
    if first:
        return (f"INSERT INTO {quote(table)} (thread_id, latest_checkpoint_id, seq)"
                " VALUES (%s, %s, 1) RETURNING seq")
    return (f"UPDATE {quote(table)} SET latest_checkpoint_id = %s, seq = seq + 1"
            " WHERE thread_id = %s AND latest_checkpoint_id = %s RETURNING seq")


def advance_and_insert(advance: str, checkpoint: tuple[type[Model], tuple[str, ...]],
                       run: tuple[type[Model], tuple[str, ...], str, tuple[str, ...]],
                       connection: BaseDatabaseWrapper) -> str:
    """PostgreSQL: ``advance``, then the checkpoint row (``seq`` from it) and the run upsert.

    The inserts read the moved row, so a lost compare-and-set inserts nothing and the
    statement returns no row.
    """
    def build() -> str:
        cp_model, cp_names = checkpoint
        run_model, run_names, conflict, update = run
        return (
            f"WITH moved AS ({advance}), "
            f"saved AS (INSERT INTO {quote(cp_model._meta.db_table)} "
            f"({', '.join(columns(cp_model, (*cp_names, 'seq')))}) "
            f"SELECT {casts(cp_model, cp_names, connection)}, moved.seq FROM moved), "
            f"mirrored AS (INSERT INTO {quote(run_model._meta.db_table)} "
            f"({', '.join(columns(run_model, run_names))}) "
            f"SELECT {casts(run_model, run_names, connection)} FROM moved"
            f"{upsert_tail(run_model, conflict, update)}) "
            "SELECT seq FROM moved"
        )
    return _cached(("advance", advance, checkpoint, run), build)


def insert_events(model: type[Model], names: tuple[str, ...], rows: int, lock: int | None,
                  connection: BaseDatabaseWrapper) -> str:
    """``rows`` rows, ids returned in row order; ``lock`` (PostgreSQL) is taken first."""
    def build() -> str:
        table = quote(model._meta.db_table)
        listed = ", ".join(columns(model, names))
        if lock is None:
            values = ", ".join([f"({', '.join(['%s'] * len(names))})"] * rows)
            return f"INSERT INTO {table} ({listed}) VALUES {values} RETURNING id"
        # The lock's one row joins every value row, so it is held before any id is drawn.
        selects = " UNION ALL ".join(
            [f"SELECT {casts(model, names, connection)}"] * rows)
        return (f"WITH ordered AS MATERIALIZED (SELECT pg_advisory_xact_lock({lock:d})) "
                f"INSERT INTO {table} ({listed}) SELECT v.* FROM ordered, ({selects}) AS v "
                "RETURNING id")
    return _cached(("events", model, names, rows, lock, connection.vendor), build)


def prepared_fetchone(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> Any:
    """Run ``sql`` as a server-side prepared statement; its first row.

    PostgreSQL only. Django's psycopg cursor binds values client-side and never prepares,
    so a save would quote ~60 values in Python and be planned afresh each time. This
    binds on the server and prepares once per connection (placeholders converted once
    per statement: ``SaveCursor``), still through the connection's execute wrappers
    (what tests and instrumentation hook into).
    """
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django turns psycopg's preparing off (None), which also ignores prepare=True.
        # A threshold never reached keeps it off for everything but these statements.
        raw.prepare_threshold = NEVER
    try:
        with connection.wrap_database_errors, SaveCursor(raw) as cursor:
            def execute(sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
                return cursor.execute(sql, params, prepare=True)

            for wrapper in reversed(connection.execute_wrappers):
                execute = partial(wrapper, execute)
            execute(sql, params, False, {"connection": connection,
                                         "cursor": CursorWrapper(cursor, connection)})
            return cursor.fetchone()
    except Exception:
        if raw.broken or raw.closed:  # lost mid-statement: the next call reconnects
            connection.close()
        raise


def latest_json(model: type[Model], column: str, where: str, using: str,
                value: Any) -> Any | None:
    """The JSON ``column`` of the row with the highest ``seq`` where ``where`` = ``value``."""
    connection = connections[using]

    def build() -> str:
        table = quote(model._meta.db_table)
        target = quote(model._meta.get_field(where).column)
        return (f"SELECT {quote(model._meta.get_field(column).column)} FROM {table}"
                f" WHERE {target} = %s ORDER BY seq DESC LIMIT 1")
    sql = _cached(("latest", model, column, where, connection.vendor), build)
    return _json_of_one_row(model, column, sql, connection, value)


def pointed_json(model: type[Model], column: str, pointer: tuple[type[Model], str, str],
                 using: str, value: Any) -> Any | None:
    """The JSON ``column`` of the row of ``model`` that ``pointer`` names: ``(owner
    model, key, field)``, the ``field`` (a primary key of ``model``) of the owner row
    whose ``key`` = ``value``. Two primary-key lookups, no index of their own."""
    connection = connections[using]
    owner, key, field = pointer

    def build() -> str:
        return (f"SELECT {quote(model._meta.get_field(column).column)}"
                f" FROM {quote(model._meta.db_table)} WHERE {quote(model._meta.pk.column)} ="
                f" (SELECT {quote(owner._meta.get_field(field).column)}"
                f" FROM {quote(owner._meta.db_table)}"
                f" WHERE {quote(owner._meta.get_field(key).column)} = %s)")
    sql = _cached(("pointed", model, column, pointer, connection.vendor), build)
    return _json_of_one_row(model, column, sql, connection, value)


def _json_of_one_row(model: type[Model], column: str, sql: str,
                     connection: BaseDatabaseWrapper, value: Any) -> Any | None:
    if connection.vendor == "postgresql":
        row = prepared_fetchone(connection, sql, [value])
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, [value])
            row = cursor.fetchone()
    field = model._meta.get_field(column)
    return None if row is None else field.from_db_value(row[0], None, connection)


def update(model: type[Model], values: dict[str, Any], pks: Sequence[Any], using: str,
           **where: Any) -> int:
    """``UPDATE`` the rows with primary key in ``pks`` (and columns = ``where``); rows hit."""
    connection = connections[using]
    names, tests = tuple(values), tuple(where)

    def build() -> str:
        pk = f"{quote(model._meta.pk.column)} IN ({', '.join(['%s'] * len(pks))})"
        conditions = " AND ".join([pk, *(f"{c} = %s" for c in columns(model, tests))])
        return f"UPDATE {quote(model._meta.db_table)} SET {_sets(model, names)} WHERE {conditions}"
    sql = _cached(("update", model, names, len(pks), tests, connection.vendor), build)
    params = [*prepare(model, values, connection), *pks, *prepare(model, where, connection)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)
