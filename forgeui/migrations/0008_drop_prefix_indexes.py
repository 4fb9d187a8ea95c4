"""Drop PostgreSQL's ``*_like`` (``varchar_pattern_ops``) indexes from the tables every
checkpoint save writes.

Django adds one beside each indexed ``CharField`` on PostgreSQL so that ``LIKE 'x%'``
can use an index. Ids and statuses here are only ever matched whole (the admin's
searches are ``icontains``, which no btree serves), so these ten indexes did nothing
but cost every save an index write and every statement an index to open and lock.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

HOT_TABLES = ("forgeui_thread", "forgeui_checkpoint", "forgeui_run", "forgeui_interrupt")


def drop_prefix_indexes(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            " AND tablename = ANY(%s) AND indexdef LIKE %s",
            [list(HOT_TABLES), "%\\_pattern\\_ops%"],
        )
        names = [row[0] for row in cursor.fetchall()]
    for name in names:
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def recreate_prefix_indexes(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for model_name in ("Thread", "Checkpoint", "Run", "Interrupt"):
        model = apps.get_model("forgeui", model_name)
        for field in model._meta.local_fields:
            sql = schema_editor._create_like_index_sql(model, field)
            if sql is not None:  # a later migration's reverse may have made it already
                schema_editor.execute(
                    str(sql).replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))


class Migration(migrations.Migration):
    dependencies = [("forgeui", "0007_notifications")]

    operations = [migrations.RunPython(drop_prefix_indexes, recreate_prefix_indexes)]
