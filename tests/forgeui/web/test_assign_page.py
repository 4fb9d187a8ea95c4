"""The supervisor's assignment picker on the interrupt page: choose, refuse in the page,
release or reassign anyone's claim."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from forgeui.models import AuditEntry, Interrupt
from forgeui.runs import services
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)


def paused(users: dict[str, User]) -> Interrupt:
    thread = services.start_run(users["supervisor"], "transfer", {}).thread_id
    return Interrupt.objects.of_tree(thread).pending().get()


def test_supervisors_pick_users_and_groups_from_lists(users: dict[str, User]) -> None:
    Group.objects.get_or_create(name="finance")
    interrupt = paused(users)
    client = logged_in(users["supervisor"])
    page = client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert 'type="checkbox" name="users" value="reviewer"' in page
    assert 'type="checkbox" name="groups" value="finance"' in page
    assert 'name="users" value="auditor"' not in page  # auditors may not answer
    assert 'name="groups" value="auditor"' not in page
    assert 'name="users" value="nobody"' not in page
    assert 'type="text" name="users"' not in page
    response = client.post(f"/interrupts/{interrupt.pk}/assign/",
                           {"users": ["reviewer"], "groups": ["finance"]})
    assert response.status_code == 302
    interrupt.refresh_from_db()
    assert (interrupt.assigned_users, interrupt.assigned_groups) == (["reviewer"], ["finance"])
    page = client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert 'name="users" value="reviewer" checked' in page
    assert 'name="groups" value="finance" checked' in page
    assert "/assign/" not in logged_in(users["reviewer"]).get(
        f"/interrupts/{interrupt.pk}/").content.decode()


def test_an_unknown_user_is_refused_inside_the_page(users: dict[str, User]) -> None:
    interrupt = paused(users)
    client = logged_in(users["supervisor"])
    response = client.post(f"/interrupts/{interrupt.pk}/assign/",
                           {"users": ["reviewer", "ghost"], "groups": []})
    html = response.content.decode()
    assert response.status_code == 422
    assert "<html" in html and 'id="assign-error"' in html and "no such users: ghost" in html
    assert 'name="users" value="reviewer" checked' in html  # the choice is kept
    assert Interrupt.objects.get(pk=interrupt.pk).assigned_users == []


def test_a_supervisor_releases_or_reassigns_anyones_claim(users: dict[str, User]) -> None:
    interrupt = paused(users)
    services.claim_interrupt(users["reviewer"], interrupt.pk)
    client = logged_in(users["supervisor"])
    page = client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert "Release reviewer's claim" in page
    assert "Release reviewer" not in logged_in(users["auditor"]).get(
        f"/interrupts/{interrupt.pk}/").content.decode()
    assert client.post(f"/interrupts/{interrupt.pk}/claim/", {"op": "release"}
                       ).status_code == 302
    assert Interrupt.objects.get(pk=interrupt.pk).claimed_by is None
    released = AuditEntry.objects.get(action="interrupt.release")
    assert released.actor == users["supervisor"] and released.detail["claimed_by"] == "reviewer"
    services.claim_interrupt(users["reviewer"], interrupt.pk)
    client.post(f"/interrupts/{interrupt.pk}/assign/", {"users": ["supervisor"]})
    interrupt.refresh_from_db()
    assert interrupt.claimed_by is None and interrupt.assigned_users == ["supervisor"]
