"""A notification's link opens one decision, for its recipient only, and never decides."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client, override_settings
from freezegun import freeze_time

from forgeui.models import Answer, AuditEntry, Interrupt, InterruptStatus
from forgeui.notifications import fanout
from forgeui.runs import services
from forgeui.team import decision_links
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)
LINK = re.compile(r"http://forge\.example\.com(/links/[^/\s]+/)")


@pytest.fixture
def finance(users: dict[str, User]) -> list[User]:
    group = Group.objects.create(name="finance")
    made = []
    for name in ("alice", "bob"):
        user = User.objects.create_user(name, email=f"{name}@example.com", password=name)
        user.groups.add(group, Group.objects.get(name="reviewer"))
        made.append(user)
    return made


@override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
                   FORGE_BASE_URL="http://forge.example.com")
def paused_and_mailed(users: dict[str, User]) -> tuple[Interrupt, dict[str, str]]:
    started = services.start_run(users["supervisor"], "custom", {
        "question": "Pay ACME?", "options": {"assignees": {"groups": ["finance"]}}})
    fanout.fan_out()
    links = {}
    for message in mail.outbox:
        [to] = message.to
        links[to] = LINK.search(message.body).group(1)
    return Interrupt.objects.of_tree(started.thread_id).pending().get(), links


def test_each_recipient_gets_a_link_of_their_own(users: dict[str, User],
                                                 finance: list[User]) -> None:
    pending, links = paused_and_mailed(users)
    assert sorted(links) == ["alice@example.com", "bob@example.com"]
    assert links["alice@example.com"] != links["bob@example.com"]
    alice = decision_links.read(links["alice@example.com"].split("/")[2])
    assert (alice.user_id, alice.interrupt_id) == (finance[0].pk, pending.pk)


def test_the_link_opens_the_interrupt_after_sign_in_and_never_decides(
        users: dict[str, User], finance: list[User]) -> None:
    pending, links = paused_and_mailed(users)
    link = links["alice@example.com"]
    anonymous = Client().get(link)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/?next=/links/")
    client = Client()
    signed_in = client.post(anonymous["Location"], {"username": "alice", "password": "alice"})
    assert signed_in["Location"] == link
    opened = client.get(link)
    assert opened.status_code == 302 and opened["Location"] == f"/interrupts/{pending.pk}/"
    assert client.get(opened["Location"]).status_code == 200
    assert client.get(link + "?action=approve&value=true").status_code == 302
    assert client.post(link, {"action": "approve"}).status_code == 405
    assert Interrupt.objects.get(pk=pending.pk).status == InterruptStatus.PENDING
    assert not Answer.objects.exists()


def test_another_signed_in_person_gets_403(users: dict[str, User],
                                           finance: list[User]) -> None:
    pending, links = paused_and_mailed(users)
    refused = logged_in(finance[1]).get(links["alice@example.com"])
    assert refused.status_code == 403
    assert "This link was sent to someone else" in refused.content.decode()
    assert str(pending.pk) not in refused.get("Location", "")
    entry = AuditEntry.objects.get(action="decision_link.refused")
    assert (entry.actor, entry.object_id) == (finance[1], pending.pk)
    supervisor = logged_in(users["supervisor"]).get(links["alice@example.com"])
    assert supervisor.status_code == 403


def test_an_expired_link_says_so(users: dict[str, User], finance: list[User]) -> None:
    with freeze_time(timedelta(hours=-73)):
        _, links = paused_and_mailed(users)
    expired = logged_in(finance[0]).get(links["alice@example.com"])
    assert expired.status_code == 410
    assert "This link has expired" in expired.content.decode()
    assert Client().get(links["alice@example.com"]).status_code == 410


def test_a_changed_link_is_not_valid(users: dict[str, User], finance: list[User]) -> None:
    token = decision_links.token_for(finance[0], "x" * 12)
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    response = logged_in(finance[0]).get(f"/links/{forged}/")
    assert response.status_code == 404 and "This link is not valid" in response.content.decode()
