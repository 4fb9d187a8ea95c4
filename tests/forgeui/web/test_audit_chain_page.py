"""The audit page says how far the chain was last verified, from the stored walk: a page
load never walks the chain itself. The periodic sweep walks it when one is due."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client, override_settings

from forgeui import scheduler
from forgeui.models import AuditEntry, ChainCheck, verify_chain
from tests.forgeui.conftest import held_already

pytestmark = pytest.mark.django_db


@pytest.fixture
def auditor() -> Client:
    user = User.objects.create_user("auditor")
    held_already(user, "auditor")
    client = Client()
    client.force_login(user)  # a sign-in: entry 1 of the chain
    return client


def status(client: Client) -> str:
    html = client.get("/audit/").content.decode()
    start = html.rindex("<p", 0, html.index('id="chain-status"'))
    return html[start:html.index("</p>", start)]


def test_the_page_shows_the_last_verification_and_never_walks_itself(auditor: Client) -> None:
    assert "has not been verified yet" in status(auditor)
    for n in range(4):
        AuditEntry.objects.create(action=f"run.start.{n}")
    verify_chain()
    shown = status(auditor)
    assert "notice-ok" in shown and "Chain verified up to entry 5, the newest, at" in shown
    assert ChainCheck.objects.get().checked_at.strftime("%Y-%m-%d %H:%M:%S") in shown
    AuditEntry.objects.create(action="after the walk")
    assert "1 entry written since is not verified yet" in status(auditor)
    for n in range(81):
        AuditEntry.objects.create(action=f"later.{n}")
    shown = status(auditor)
    # Not green while most of the log is unchecked: how far, when, and how many came after.
    assert "notice-ok" not in shown and "Chain verified up to entry 5 at" in shown
    assert "82 entries written since are not verified yet" in shown
    assert ChainCheck.objects.count() == 1


def test_a_broken_chain_is_shown_with_the_entry_and_the_kind(auditor: Client) -> None:
    for n in range(4):
        AuditEntry.objects.create(action=f"run.start.{n}")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE forgeui_auditentry SET action = 'forged' WHERE seq = 3")
    verify_chain()
    shown = status(auditor)
    assert 'role="alert"' in shown and "Chain broken at entry 3 (changed)" in shown


def test_the_sweep_walks_the_chain_only_when_one_is_due(auditor: Client) -> None:
    assert scheduler.verify_audit_task.call() == {"verified": 1, "ok": True}
    assert scheduler.verify_audit_task.call() == {"verified": None}
    assert "checked every 60 s" in status_after_one_more(auditor)
    with override_settings(FORGE_AUDIT_VERIFY_SECONDS=0):
        assert scheduler.verify_audit_task.call() == {"verified": 2, "ok": True}
    assert ChainCheck.objects.count() == 2


def status_after_one_more(client: Client) -> str:
    AuditEntry.objects.create(action="one more")
    return status(client)
