"""The audit log's hash chain: every write joins it, and ``verify_audit`` names the first
entry that SQL changed, removed, inserted or reordered, in the database or in an export."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connections, transaction

from forgeui.models import AuditEntry, ChainCheck
from forgeui.models.audit_chain import GENESIS, entry_hash
from forgeui.runs import services

ROOT = Path(__file__).resolve().parents[3]
ALIASES = ["default", pytest.param("postgres", marks=pytest.mark.postgres)]
BOTH = pytest.mark.django_db(databases=["default", "postgres"])


def write_chain(alias: str, count: int = 6) -> list[AuditEntry]:
    actor = User.objects.db_manager(alias).create_user("alice")
    return [AuditEntry.objects.using(alias).create(
        actor=actor, action=f"answer.{n}", object_type="interrupt", object_id=f"i{n}",
        detail={"n": n, "amount": 12.5, "whole": 3.0, "big": 1e20, "text": "é ✓"})
        for n in range(1, count + 1)]


def verify(alias: str, *args: str) -> str:
    """``verify_audit``'s output; its error when it exits 1."""
    out = []
    try:
        call_command("verify_audit", "--database", alias, *args,
                     stdout=type("Out", (), {"write": lambda self, s: out.append(s),
                                             "flush": lambda self: None})())
    except CommandError as exc:
        assert exc.returncode == 1
        return f"exit 1: {exc}"
    return "".join(out)


def tamper(alias: str, *statements: tuple[str, list[Any]]) -> None:
    """Raw SQL past the ORM; on PostgreSQL the append-only trigger is first switched off
    for the test's transaction, as only a superuser could."""
    with connections[alias].cursor() as cursor:
        if connections[alias].vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        for sql, params in statements:
            cursor.execute(sql, params)
        if connections[alias].vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = DEFAULT")


def renumber_from(seq: int) -> list[tuple[str, list[Any]]]:
    """Move entries ``seq`` on one place up, in two steps so ``seq`` stays unique."""
    table = "forgeui_auditentry"
    return [(f"UPDATE {table} SET seq = seq + 1000000 WHERE seq >= %s", [seq]),
            (f"UPDATE {table} SET seq = seq - 999999 WHERE seq >= 1000000", [])]


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_each_entry_hashes_its_canonical_json_onto_the_one_before(alias: str) -> None:
    first, second = write_chain(alias, 2)
    stored = AuditEntry.objects.using(alias).get(pk=second.pk)
    body = {"seq": 2, "timestamp": stored.created_at.astimezone(UTC).isoformat(
                timespec="microseconds"),
            "actor": "alice", "sign_in": "", "action": "answer.2",
            "target": {"object_type": "interrupt", "object_id": "i2", "run_id": "",
                       "thread_id": "", "before_checkpoint_id": "", "after_checkpoint_id": ""},
            "details": {"n": 2, "amount": 12.5, "whole": 3.0, "big": 10**20, "text": "é ✓"},
            "actor_id": stored.actor_id}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert first.prev_hash == GENESIS and stored.prev_hash == first.entry_hash
    assert (stored.seq, stored.entry_hash) == (
        2, hashlib.sha256((first.entry_hash + text).encode()).hexdigest())


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_an_intact_chain_verifies_and_the_result_is_stored(alias: str) -> None:
    write_chain(alias)
    assert verify(alias) == "verified 6 entries\n"
    check = ChainCheck.objects.using(alias).newest()
    assert check is not None and check.passed and (check.entries, check.last_seq) == (6, 6)


@pytest.mark.django_db
def test_the_services_writer_and_bulk_create_join_the_chain() -> None:
    write_chain("default", 2)
    services.audit(None, "system.note")
    AuditEntry.objects.bulk_create([AuditEntry(action="a"), AuditEntry(action="b")])
    assert verify("default") == "verified 5 entries\n"


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_an_edited_entry_is_reported_as_changed(alias: str) -> None:
    write_chain(alias)
    tamper(alias, ("UPDATE forgeui_auditentry SET action = 'answer.approved' WHERE seq = 3",
                   []))
    assert verify(alias).startswith("exit 1: INVALID: changed at entry 3:")
    check = ChainCheck.objects.using(alias).newest()
    assert check is not None and (check.broken_kind, check.broken_seq) == ("changed", 3)


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_a_deleted_entry_is_reported_as_removed(alias: str) -> None:
    write_chain(alias)
    tamper(alias, ("DELETE FROM forgeui_auditentry WHERE seq = 4", []))
    assert verify(alias).startswith("exit 1: INVALID: removed at entry 4:")


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_a_deleted_and_renumbered_tail_is_caught_against_the_last_verified_tip(
        alias: str) -> None:
    write_chain(alias)
    assert verify(alias) == "verified 6 entries\n"
    tamper(alias, ("DELETE FROM forgeui_auditentry WHERE seq >= 5", []))
    assert verify(alias).startswith("exit 1: INVALID: removed at entry 5: entries 5 to 6")


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_swapped_entries_are_reported_as_reordered(alias: str) -> None:
    write_chain(alias)
    tamper(alias, ("UPDATE forgeui_auditentry SET seq = -1 WHERE seq = 3", []),
           ("UPDATE forgeui_auditentry SET seq = 3 WHERE seq = 4", []),
           ("UPDATE forgeui_auditentry SET seq = 4 WHERE seq = -1", []))
    assert verify(alias).startswith("exit 1: INVALID: reordered at entry 3:")


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_a_forged_entry_with_a_good_hash_is_reported_as_inserted(alias: str) -> None:
    entries = write_chain(alias)
    connection = connections[alias]
    forged = {"seq": 3, "timestamp": entries[1].record()["timestamp"], "actor": "alice",
              "sign_in": "", "action": "answer.approved", "details": {}, "version": 2,
              "actor_id": None,
              "target": {"object_type": "interrupt", "object_id": "i9", "run_id": "",
                         "thread_id": "", "before_checkpoint_id": "",
                         "after_checkpoint_id": ""}}
    forged_hash = entry_hash(entries[1].entry_hash, forged)
    insert = ("INSERT INTO forgeui_auditentry (action, object_type, object_id, run_id, "
              "thread_id, before_checkpoint_id, after_checkpoint_id, detail, created_at, "
              "actor_name, sign_in, seq, prev_hash, entry_hash, chain_version) VALUES "
              "(%s, 'interrupt', 'i9', '', '', '', '', '{}', %s, 'alice', '', 3, %s, %s, 2)")
    tamper(alias, *renumber_from(3), (insert, [
        "answer.approved", connection.ops.adapt_datetimefield_value(entries[1].created_at),
        entries[1].entry_hash, forged_hash]))
    assert verify(alias).startswith("exit 1: INVALID: inserted at entry 3:")


@pytest.mark.postgres
@pytest.mark.django_db(databases=["postgres"])
def test_the_database_refuses_update_and_delete_on_postgresql() -> None:
    write_chain("postgres", 2)
    for sql in ("UPDATE forgeui_auditentry SET action = 'x' WHERE seq = 1",
                "DELETE FROM forgeui_auditentry WHERE seq = 2"):
        with pytest.raises(IntegrityError, match="append-only"), \
                transaction.atomic(using="postgres"), connections["postgres"].cursor() as cur:
            cur.execute(sql)
    assert AuditEntry.objects.using("postgres").filter(action__startswith="answer").count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(databases=["postgres"])
def test_deleting_a_user_keeps_their_entries_and_the_chain() -> None:
    entry = write_chain("postgres", 2)[0]
    User.objects.db_manager("postgres").get(username="alice").delete()
    stored = AuditEntry.objects.using("postgres").get(pk=entry.pk)
    assert (stored.actor_id, stored.actor_name) == (entry.actor_id, "alice")
    assert verify("postgres") == "verified 2 entries\n"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_concurrent_writers_on_postgresql_make_one_unbroken_chain() -> None:
    writers, each, errors = 6, 15, []
    start = threading.Barrier(writers)

    def write(n: int) -> None:
        try:
            start.wait(timeout=30)
            for k in range(each):
                with transaction.atomic(using="postgres"):
                    AuditEntry.objects.using("postgres").create(action=f"w{n}.{k}")
        except Exception as exc:  # reported below; a thread cannot fail the test itself
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    seqs = list(AuditEntry.objects.using("postgres").order_by("seq")
                .values_list("seq", flat=True))
    assert seqs == list(range(1, writers * each + 1))
    assert verify("postgres") == f"verified {writers * each} entries\n"


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_an_export_verifies_offline_and_a_tampered_one_does_not(alias: str,
                                                                tmp_path: Path) -> None:
    write_chain(alias)
    exported = tmp_path / "audit.jsonl"
    assert verify(alias, "--export", str(exported)) == f"exported 6 entries to {exported}\n"
    lines = exported.read_text(encoding="utf-8").splitlines(keepends=True)
    assert verify(alias, "--file", str(exported)) == "verified 6 entries\n"
    edited = json.loads(lines[1]) | {"actor": "mallory"}
    cases = {"changed at entry 2": [lines[0], json.dumps(edited) + "\n", *lines[2:]],
             "removed at entry 3": lines[:2] + lines[3:],
             "reordered at entry 4": [*lines[:3], lines[4], lines[3], *lines[5:]]}
    for expected, tampered in cases.items():
        exported.write_text("".join(tampered), encoding="utf-8")
        assert verify(alias, "--file", str(exported)).startswith(f"exit 1: INVALID: {expected}")


@pytest.mark.django_db
def test_an_export_is_checked_with_no_database_at_all(tmp_path: Path) -> None:
    write_chain("default", 3)
    exported = tmp_path / "audit.jsonl"
    verify("default", "--export", str(exported))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "forgeui.settings", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": "postgres://nobody@127.0.0.1:9/none"}
    command = [sys.executable, "manage.py", "verify_audit", "--file", str(exported)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout) == (0, "verified 3 entries\n"), done.stderr
    lines = exported.read_text(encoding="utf-8").splitlines(keepends=True)
    exported.write_text("".join(lines[1:]), encoding="utf-8")
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and "INVALID: removed at entry 1" in done.stderr


def test_a_file_that_is_no_export_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    for line, error in (('{"seq": 1}', "line 1 is not an audit entry"),
                        ("[1, 2]", "line 1 is not an audit entry"), ("7", "not an audit"),
                        ("{", "line 1 is not JSON")):
        bad.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(CommandError, match=error):
            call_command("verify_audit", "--file", str(bad))
    with pytest.raises(CommandError, match="cannot read"):
        call_command("verify_audit", "--file", str(tmp_path / "missing.jsonl"))


def test_timestamps_hash_in_utc_to_the_microsecond() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    entry = AuditEntry(seq=1, created_at=moment, action="x", prev_hash=GENESIS, detail={})
    assert entry.record()["timestamp"] == "2026-01-02T03:04:05.000006+00:00"


@pytest.fixture
def before_the_chain(request: pytest.FixtureRequest) -> Any:
    from tests.forgeui.models.test_migration_records import _latest, migrate

    alias = request.param
    try:
        yield alias, migrate(alias, [("forgeui", "0020_record_help_names_the_store_kit")])
    finally:
        migrate(alias, [("forgeui", _latest(alias))])


@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
@pytest.mark.parametrize("before_the_chain", ALIASES, indirect=True)
def test_the_migration_chains_existing_entries_in_id_order(before_the_chain: Any) -> None:
    from tests.forgeui.models.test_migration_records import _latest, migrate

    alias, apps = before_the_chain
    old = apps.get_model("forgeui", "AuditEntry").objects.using(alias)
    bob = apps.get_model("auth", "User").objects.using(alias).create(username="bob")
    made = [old.create(action=f"old.{n}", actor=bob if n % 2 else None, detail={"n": n})
            for n in range(5)]
    migrate(alias, [("forgeui", _latest(alias))])
    chained = list(AuditEntry.objects.using(alias).order_by("seq").values_list("id", "actor_name"))
    assert chained == [(e.pk, "bob" if n % 2 else "") for n, e in enumerate(made)]
    AuditEntry.objects.using(alias).create(action="new")
    assert verify(alias) == "verified 6 entries\n"
