"""Who an audit entry names is what the chain protects: the page, its exports and
``/api/audit`` show the name hashed into the entry, and pointing an entry at another
account breaks the chain as renaming its actor does."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from forgeui.models import ApiToken, AuditEntry
from tests.forgeui.models.test_audit_chain import ALIASES, BOTH, tamper, verify, write_chain

pytestmark = pytest.mark.django_db
EVERYWHERE_ALICE = {shown: {"alice"} for shown in ("page", "csv", "json", "api")}


def auditor() -> tuple[Client, Client]:
    """A signed-in page client and a bearer API client for one auditor."""
    user = User.objects.create_user("ada")
    user.groups.add(Group.objects.get_or_create(name="auditor")[0])
    page = Client()
    page.force_login(user)
    token = ApiToken.objects.issue(user, name="tests")[1]
    return page, Client(headers={"Authorization": f"Bearer {token}"})


def shown_actors(page: Client, api: Client) -> dict[str, set[str]]:
    """The actor of every ``answer.*`` entry as the page, the CSV, the JSON and the API
    show it."""
    html = page.get("/audit/", {"action": "answer"}).content.decode()
    rows = html.split('<tr class="audit-answer')[1:]
    in_page = {row.split("<td>")[2].split("<")[0].strip() for row in rows}
    in_csv = {row["actor"] for row in csv.DictReader(io.StringIO(b"".join(
        page.get("/audit/export.csv", {"action": "answer"}).streaming_content).decode()))}
    in_json = {row["actor"] for row in json.loads(b"".join(
        page.get("/audit/export.json", {"action": "answer"}).streaming_content))["items"]}
    in_api = {row["actor"] for row in api.get("/api/audit", {"action": "answer"}).json()["items"]}
    return {"page": in_page, "csv": in_csv, "json": in_json, "api": in_api}


def test_a_renamed_or_deleted_actor_is_shown_by_the_name_the_chain_holds() -> None:
    page, api = auditor()
    write_chain("default", 2)
    alice = User.objects.get(username="alice")
    alice.username = "mallory"
    alice.save()
    assert shown_actors(page, api) == EVERYWHERE_ALICE
    # The filter finds the entries by that name too.
    assert api.get("/api/audit", {"actor": "alice"}).json()["count"] == 2
    alice.delete()
    assert shown_actors(page, api) == EVERYWHERE_ALICE
    assert verify("default") == f"verified {AuditEntry.objects.count()} entries\n"


def test_an_entry_repointed_at_another_account_is_shown_unchanged() -> None:
    page, api = auditor()
    write_chain("default", 2)
    bob = User.objects.create_user("bob")
    tamper("default", ("UPDATE forgeui_auditentry SET actor_id = %s", [bob.pk]))
    assert shown_actors(page, api)["api"] == {"alice"}
    assert shown_actors(page, api)["page"] == {"alice"}


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_an_entry_repointed_at_another_account_fails_verification(alias: str) -> None:
    write_chain(alias, 4)
    bob = User.objects.db_manager(alias).create_user("bob")
    tamper(alias, ("UPDATE forgeui_auditentry SET actor_id = %s WHERE seq = 3", [bob.pk]))
    assert verify(alias).startswith("exit 1: INVALID: changed at entry 3:")


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_an_entry_whose_actor_was_taken_away_fails_verification(alias: str) -> None:
    write_chain(alias, 4)
    tamper(alias, ("UPDATE forgeui_auditentry SET actor_id = NULL WHERE seq = 2", []))
    assert verify(alias).startswith("exit 1: INVALID: changed at entry 2:")


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_a_renamed_actor_name_fails_verification(alias: str) -> None:
    write_chain(alias, 4)
    tamper(alias, ("UPDATE forgeui_auditentry SET actor_name = 'bob' WHERE seq = 2", []))
    assert verify(alias).startswith("exit 1: INVALID: changed at entry 2:")


def test_the_exported_chain_holds_the_actor_id_and_catches_its_change(tmp_path: Path) -> None:
    (first, *_) = write_chain("default", 3)
    exported = tmp_path / "audit.jsonl"
    verify("default", "--export", str(exported))
    lines = exported.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    assert (record["actor"], record["actor_id"], record["version"]) == (
        "alice", first.actor_id, 2)
    edited = json.dumps(record | {"actor_id": first.actor_id + 1}) + "\n"
    exported.write_text("".join([edited, *lines[1:]]), encoding="utf-8")
    assert verify("default", "--file", str(exported)).startswith(
        "exit 1: INVALID: changed at entry 1")
    downgraded = json.dumps(record | {"version": 1}) + "\n"
    exported.write_text("".join([downgraded, *lines[1:]]), encoding="utf-8")
    assert verify("default", "--file", str(exported)).startswith(
        "exit 1: INVALID: changed at entry 1")


def test_an_entry_of_a_deleted_user_still_opens_in_the_admin() -> None:
    entry = write_chain("default", 1)[0]
    User.objects.get(username="alice").delete()
    boss = User.objects.create_superuser("boss", password="boss-password")
    admin = Client()
    admin.force_login(boss)
    page = admin.get(f"/admin/forgeui/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and "alice" in page.content.decode()
    assert str(AuditEntry.objects.get(pk=entry.pk)).endswith("alice answer.1")


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_work_redone_from_an_entry_names_its_actor_only_while_the_account_exists(
        alias: str) -> None:
    """``recover_runs`` starts a lost run as its starter: never as an account now gone."""
    users, entries = User.objects.db_manager(alias), AuditEntry.objects.using(alias)
    alice = users.create(username="alice")
    given = {"amount": 1.0, "to": ["x", 2]}
    entries.create(actor=alice, action="run.start", run_id="r1", detail={"input": given})
    entries.create(action="run.start", run_id="r2", detail={"input": None})
    assert entries.accepted_start("r1") == (given, alice.pk)
    assert entries.accepted_start("r2") == (None, None)
    assert entries.accepted_start("r3") is None
    alice.delete()
    assert entries.accepted_start("r1") == (given, None)
