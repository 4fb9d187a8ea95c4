"""Who holds which role is history: every membership change is an entry in the chain."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from forgeui.models import AuditEntry
from forgeui.team import membership

pytestmark = pytest.mark.django_db


def changes(since: int = 0) -> list[tuple[str, str, str, str]]:
    """(action, username, group, team) of each membership entry after ``since``."""
    found = AuditEntry.objects.filter(action__startswith="membership.", seq__gt=since)
    return [(e.action, e.detail["user"], e.detail["group"], e.team)
            for e in found.order_by("seq")]


def tip() -> int:
    return AuditEntry.objects.tip_seq()


def group(name: str) -> Group:
    return Group.objects.get_or_create(name=name)[0]


def test_adding_and_removing_from_either_side_writes_one_entry_each() -> None:
    dana = User.objects.create_user("dana")
    lee = User.objects.create_user("lee")
    finance = group("finance:reviewer")
    dana.groups.add(finance, group("auditor"))
    dana.groups.add(finance)  # already held: nothing changes, nothing is written
    finance.user_set.add(lee)
    assert changes() == [("membership.added", "dana", "auditor", ""),
                         ("membership.added", "dana", "finance:reviewer", "finance"),
                         ("membership.added", "lee", "finance:reviewer", "finance")]
    start = tip()
    dana.groups.remove(finance, group("supervisor"))  # supervisor was never held
    finance.user_set.remove(lee)
    assert changes(start) == [("membership.removed", "dana", "finance:reviewer", "finance"),
                              ("membership.removed", "lee", "finance:reviewer", "finance")]
    entry = AuditEntry.objects.filter(action="membership.removed").first()
    assert entry is not None and entry.object_type == "user"
    assert entry.object_id == str(dana.pk) and entry.actor_id is None


def test_set_and_clear_from_either_side_and_deletions_are_written() -> None:
    dana = User.objects.create_user("dana")
    lee = User.objects.create_user("lee")
    support, finance = group("support:auditor"), group("finance:supervisor")
    dana.groups.set([support, finance])
    start = tip()
    dana.groups.set([finance])
    assert changes(start) == [("membership.removed", "dana", "support:auditor", "support")]
    start = tip()
    dana.groups.clear()
    assert changes(start) == [("membership.removed", "dana", "finance:supervisor", "finance")]
    finance.user_set.set([dana, lee])
    start = tip()
    finance.user_set.clear()
    assert changes(start) == [("membership.removed", "dana", "finance:supervisor", "finance"),
                              ("membership.removed", "lee", "finance:supervisor", "finance")]
    support.user_set.add(dana, lee)
    start = tip()
    support.delete()
    assert changes(start) == [("membership.removed", "dana", "support:auditor", "support"),
                              ("membership.removed", "lee", "support:auditor", "support")]
    lee.groups.add(finance)
    start = tip()
    lee.delete()
    assert changes(start) == [("membership.removed", "lee", "finance:supervisor", "finance")]


def test_an_actor_named_by_acting_is_recorded_and_the_chain_verifies() -> None:
    admin = User.objects.create_user("root", is_staff=True, is_superuser=True)
    dana = User.objects.create_user("dana")
    with membership.acting(admin, "password"):
        dana.groups.add(group("finance:reviewer"))
    entry = AuditEntry.objects.get(action="membership.added", detail__user="dana")
    assert (entry.actor_id, entry.actor_name, entry.sign_in) == (admin.pk, "root", "password")
    dana.groups.add(group("reviewer"))  # outside: no actor
    assert AuditEntry.objects.get(detail__group="reviewer").actor_id is None
    out = io.StringIO()
    call_command("verify_audit", stdout=out)
    assert out.getvalue().startswith("verified ")


def test_a_team_auditor_reads_the_membership_entries_of_their_team_only() -> None:
    dana = User.objects.create_user("dana")
    dana.groups.add(group("finance:reviewer"), group("support:reviewer"), group("reviewer"))
    auditor = User.objects.create_user("ann")
    auditor.groups.add(group("finance:auditor"))
    seen = AuditEntry.objects.visible_to(auditor).filter(action="membership.added")
    assert sorted(e.detail["group"] for e in seen) == ["finance:auditor", "finance:reviewer"]


def test_the_admin_change_form_records_the_admin_and_says_what_groups_are() -> None:
    admin = User.objects.create_superuser("root", password="pw")
    dana = User.objects.create_user("dana")
    finance = group("finance:reviewer")
    client = Client()
    client.force_login(admin)
    for url in (f"/admin/auth/user/{dana.pk}/change/", "/admin/auth/group/add/"):
        page = client.get(url)
        assert page.status_code == 200 and "TEAM:ROLE" in page.content.decode(), url
    form = {"username": "dana", "groups": [str(finance.pk)], "is_active": "on",
            "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01", "initial-date_joined_1": "00:00:00"}
    saved = client.post(f"/admin/auth/user/{dana.pk}/change/", form)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    entry = AuditEntry.objects.get(action="membership.added", detail__user="dana")
    assert entry.actor_id == admin.pk and entry.team == "finance"
    deleted = client.post(f"/admin/auth/group/{finance.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    removed = AuditEntry.objects.get(action="membership.removed", detail__user="dana")
    assert removed.actor_id == admin.pk and removed.detail["group"] == "finance:reviewer"
