"""On PostgreSQL, one call takes the audit chain's lock and reads the chain's tip.

A function's statements each take a fresh snapshot (it is volatile), so the tip it reads
is the one the lock's last holder committed; a single statement would read its own older
snapshot. One round trip fewer while the lock is held, which every writer waits on.
"""

from importlib import import_module

from django.db import migrations

PostgresOnlySQL = import_module("forgeui.migrations.0025_audit_hash_chain").PostgresOnlySQL

TIP = """
CREATE OR REPLACE FUNCTION forgeui_audit_tip(chain_lock bigint)
RETURNS TABLE (seq bigint, entry_hash varchar)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(chain_lock);
    RETURN QUERY SELECT e.seq, e.entry_hash FROM forgeui_auditentry e ORDER BY e.seq DESC
        LIMIT 1;
END
$$;
"""
DROP_TIP = "DROP FUNCTION IF EXISTS forgeui_audit_tip(bigint);"


class Migration(migrations.Migration):

    dependencies = [
        ("forgeui", "0031_webhook_team"),
    ]

    operations = [PostgresOnlySQL(TIP, DROP_TIP)]
