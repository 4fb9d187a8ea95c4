"""Audit entries hash their actor's id too (chain version 2; older entries keep version 1),
so the id outlives the account: no constraint, and deleting a user leaves it. The trigger
on PostgreSQL then refuses every UPDATE. A chain check records whether it walked the whole
chain or went on from the last verified tip.
"""

from importlib import import_module

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

PostgresOnlySQL = import_module("forgeui.migrations.0025_audit_hash_chain").PostgresOnlySQL

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION forgeui_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'forgeui_auditentry is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
"""
NULLING_ALLOWED = """
CREATE OR REPLACE FUNCTION forgeui_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
            AND to_jsonb(NEW) - 'actor_id' = to_jsonb(OLD) - 'actor_id' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'forgeui_auditentry is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("forgeui", "0027_run_forked_by"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry", name="chain_version",
            field=models.PositiveSmallIntegerField(default=1, editable=False),
        ),
        migrations.AlterField(
            model_name="auditentry", name="chain_version",
            field=models.PositiveSmallIntegerField(default=2, editable=False),
        ),
        migrations.AlterField(
            model_name="auditentry", name="actor",
            field=models.ForeignKey(
                blank=True, db_constraint=False, null=True,
                on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                to=settings.AUTH_USER_MODEL),
        ),
        PostgresOnlySQL(APPEND_ONLY, NULLING_ALLOWED),
        migrations.AddField(
            model_name="chaincheck", name="full",
            field=models.BooleanField(default=True),
        ),
    ]
