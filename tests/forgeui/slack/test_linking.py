"""Who a Slack user acts as: a signed link, link_slack, the admin, or e-mail if allowed."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from forgeui.models import Answer, AuditEntry
from forgeui.runs import services
from forgeui.slack import linking
from forgeui.slack.models import SlackLink
from tests.forgeui.slack.conftest import ephemerals, pending, press
from tests.forgeui.slack.standin import SlackStandIn

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_link_an_unlinked_user_is_sent_links_whoever_opens_it_signed_in(
        users: dict[str, User], slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    interrupt = pending("custom")
    press(slack, interrupt.pk, "approve", "U7")
    [told] = ephemerals(slack, "U7")
    path = re.search(r"http://[^/]+(/slack/link/[^/ ]+/)", told)
    assert path is not None
    assert Client().get(path[1]).status_code == 302  # to the login page first
    client = signed_in(users["reviewer"])
    page = client.get(path[1])
    assert page.status_code == 200 and "U7" in page.content.decode()
    assert not SlackLink.objects.exists()  # a GET only asks
    client.post(path[1])
    assert SlackLink.objects.get(slack_user_id="U7").user == users["reviewer"]
    assert AuditEntry.objects.filter(action="slack.link", object_id="reviewer").exists()
    press(slack, interrupt.pk, "approve", "U7")
    assert Answer.objects.get(interrupt=interrupt).user == users["reviewer"]
    assert "U7" in client.get("/slack/link/").content.decode()
    client.post("/slack/link/")
    assert not SlackLink.objects.exists()


def test_a_forged_link_is_refused(users: dict[str, User], slack: SlackStandIn) -> None:
    token = linking.link_url("U7", "T1").rstrip("/").rsplit("/", 1)[1]
    reply = signed_in(users["reviewer"]).post(f"/slack/link/{token[:-2]}xx/")
    assert reply.status_code == 400 and "not valid" in reply.content.decode()
    assert not SlackLink.objects.exists()


def test_link_slack_command(users: dict[str, User]) -> None:
    call_command("link_slack", "reviewer", "U1")
    assert SlackLink.objects.get(user=users["reviewer"]).slack_user_id == "U1"
    with pytest.raises(CommandError, match="linked to reviewer"):
        call_command("link_slack", "auditor", "U1")
    with pytest.raises(CommandError, match="no user"):
        call_command("link_slack", "ghost", "U2")
    call_command("link_slack", "reviewer", "--remove")
    assert not SlackLink.objects.exists()


def test_a_link_made_in_the_admin_is_audited(users: dict[str, User]) -> None:
    admin = User.objects.create_superuser("admin", password="admin")
    reply = signed_in(admin).post("/admin/forgeui/slacklink/add/", {
        "user": users["reviewer"].pk, "slack_user_id": "U3", "team_id": ""})
    assert reply.status_code == 302, reply.content.decode()[:2000]
    assert SlackLink.objects.get(slack_user_id="U3").via == "admin"
    assert AuditEntry.objects.filter(action="slack.link", actor=admin).exists()
    taken = signed_in(admin).post("/admin/forgeui/slacklink/add/", {
        "user": users["auditor"].pk, "slack_user_id": "U3", "team_id": ""})
    assert taken.status_code == 200 and "already exists" in taken.content.decode()
    assert SlackLink.objects.count() == 1


def test_email_matching_links_only_where_allowed(users: dict[str, User], slack: SlackStandIn,
                                                 settings: Any) -> None:
    users["reviewer"].email = "rev@example.com"
    users["reviewer"].save()
    slack.emails["U5"] = "REV@example.com"
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    interrupt = pending("custom")
    press(slack, interrupt.pk, "approve", "U5")
    assert not Answer.objects.exists() and slack.of("users.info") == []
    settings.FORGE_SLACK_LINK_BY_EMAIL = True
    press(slack, interrupt.pk, "approve", "U5")
    answer = Answer.objects.get(interrupt=interrupt)
    assert answer.user == users["reviewer"] and answer.sign_in == "slack"
    assert SlackLink.objects.get(slack_user_id="U5").via == "email"


def test_a_shared_email_links_no_one(users: dict[str, User], slack: SlackStandIn,
                                     settings: Any) -> None:
    settings.FORGE_SLACK_LINK_BY_EMAIL = True
    for name in ("reviewer", "auditor"):
        users[name].email = "team@example.com"
        users[name].save()
    slack.emails["U5"] = "team@example.com"
    assert linking.acting_user("U5") is None and not SlackLink.objects.exists()
