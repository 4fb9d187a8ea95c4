"""The audit log becomes a hash chain: new columns, the existing entries chained in id
order, ``seq`` made unique, then (on PostgreSQL) a trigger that refuses UPDATE and DELETE.

TRUNCATE is left to the database's owner: the tests empty tables with it between
transactional tests, and an application role should not hold it (see docs/audit.md).
"""

from typing import Any

from django.db import migrations, models

from forgeui.models.audit import RECORD_COLUMNS, record_of
from forgeui.models.audit_chain import GENESIS, entry_hash

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION forgeui_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Deleting a user nulls its foreign key; the chain hashed the name, which stays.
    IF TG_OP = 'UPDATE' AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
            AND to_jsonb(NEW) - 'actor_id' = to_jsonb(OLD) - 'actor_id' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'forgeui_auditentry is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER forgeui_audit_append_only BEFORE UPDATE OR DELETE ON forgeui_auditentry
    FOR EACH ROW EXECUTE FUNCTION forgeui_audit_append_only();
"""
DROP_APPEND_ONLY = """
DROP TRIGGER IF EXISTS forgeui_audit_append_only ON forgeui_auditentry;
DROP FUNCTION IF EXISTS forgeui_audit_append_only();
"""


class PostgresOnlySQL(migrations.RunSQL):
    """SQL that runs on PostgreSQL and is a no-op on every other database."""

    def database_forwards(self, app_label: str, schema_editor: Any, *args: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, *args)

    def database_backwards(self, app_label: str, schema_editor: Any, *args: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, *args)


def chain_existing(apps: Any, schema_editor: Any) -> None:
    entry_model = apps.get_model("forgeui", "AuditEntry")
    entries = entry_model.objects.using(schema_editor.connection.alias)
    prev = GENESIS
    for seq, entry in enumerate(entries.select_related("actor").order_by("id").iterator(), 1):
        entry.seq, entry.prev_hash = seq, prev
        # A historical model has no get_username(); the default user model names it so.
        entry.actor_name = getattr(entry.actor, "username", "") if entry.actor else ""
        entry.entry_hash = prev = entry_hash(prev, record_of(
            tuple(getattr(entry, name) for name in RECORD_COLUMNS)))
        entry.save(update_fields=["seq", "prev_hash", "actor_name", "entry_hash"])


class Migration(migrations.Migration):

    dependencies = [
        ("forgeui", "0024_approval_policies"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry", name="actor_name",
            field=models.CharField(blank=True, default="", editable=False, max_length=150),
        ),
        migrations.AddField(
            model_name="auditentry", name="seq",
            field=models.BigIntegerField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="auditentry", name="prev_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="auditentry", name="entry_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(chain_existing, migrations.RunPython.noop, elidable=False),
        migrations.AlterField(
            model_name="auditentry", name="seq",
            field=models.BigIntegerField(editable=False, unique=True),
        ),
        PostgresOnlySQL(APPEND_ONLY, DROP_APPEND_ONLY),
    ]
