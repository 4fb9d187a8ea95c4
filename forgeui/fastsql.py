"""INSERT and upsert statements for the checkpoint store's hot path, built once.

A save runs a few statements per step of every run. The ORM compiles each one afresh,
which costs more than the database's own work; here the SQL is built once per model and
column set, and values still go through each field's ``get_db_prep_save``, exactly as the
ORM would send them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.models import Model

_statements: dict[tuple[Any, ...], str] = {}


def _statement(model: type[Model], names: tuple[str, ...], conflict: str | None,
               update: tuple[str, ...], vendor: str) -> str:
    key = (model, names, conflict, update, vendor)
    sql = _statements.get(key)
    if sql is None:
        meta = model._meta
        quote = connections["default"].ops.quote_name
        columns = [quote(meta.get_field(n).column) for n in names]
        sql = (f"INSERT INTO {quote(meta.db_table)} ({', '.join(columns)}) "
               f"VALUES ({', '.join(['%s'] * len(columns))})")
        if conflict is not None:
            target = quote(meta.get_field(conflict).column)
            sets = ", ".join(f"{c} = excluded.{c}"
                             for c in (quote(meta.get_field(n).column) for n in update))
            sql += f" ON CONFLICT ({target}) DO UPDATE SET {sets}"
        _statements[key] = sql
    return sql


def insert(model: type[Model], values: dict[str, Any], using: str,
           conflict: str | None = None, update: Sequence[str] = ()) -> None:
    """``INSERT`` one row (``ON CONFLICT (conflict) DO UPDATE SET update...`` if given)."""
    connection = connections[using]
    names = tuple(values)
    sql = _statement(model, names, conflict, tuple(update), connection.vendor)
    fields = [model._meta.get_field(n) for n in names]
    params = [f.get_db_prep_save(values[f.name], connection=connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
