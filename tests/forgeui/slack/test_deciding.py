"""Deciding from Slack, and every other way of deciding showing in the Slack message.

Presses are signed as Slack signs them and go through Django's test client; the answer
goes through the inbox's gate (the runs' services) with the immediate task backend.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone

from forgeui.models import Answer, Approval, AuditEntry, Interrupt, Run
from forgeui.runs import deadlines, services
from forgeui.slack import linking
from forgeui.slack.models import LinkedVia
from tests.forgeui.slack.conftest import (
    SECRET,
    ephemerals,
    message_of,
    pending,
    post,
    press,
    press_of,
)
from tests.forgeui.slack.standin import (
    SlackStandIn,
    buttons,
    press_payload,
    signed_body,
    submission,
    text_of,
)

pytestmark = pytest.mark.django_db(transaction=True)

FOUR_EYES = {"payments": {"nodes": ["signoff/sign"], "approvals": 2, "groups": ["finance"]}}


def ask(user: User, **options: Any) -> Interrupt:
    services.start_run(user, "custom", {"question": "Ship it?", "options": options})
    return pending("custom")


def linked(user: User, slack_user: str) -> None:
    linking.link(user, slack_user, "T1", LinkedVia.COMMAND, by=None)


def final_text(slack: SlackStandIn, interrupt_id: str) -> str:
    shown = message_of(slack, interrupt_id)
    assert buttons(shown["blocks"]) == {}, "an ended interrupt's message keeps no buttons"
    return text_of(shown["blocks"])


def test_approve_in_slack_resumes_the_run_as_the_linked_user(
        users: dict[str, User], slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    linked(users["reviewer"], "U1")
    assert press(slack, interrupt.pk, "approve", "U1").status_code == 200
    answer = Answer.objects.get(interrupt=interrupt)
    assert (answer.user, answer.sign_in, answer.value) == (users["reviewer"], "slack", True)
    assert Run.objects.get(pk=interrupt.run_id).status == "completed"
    assert AuditEntry.objects.filter(action="answer", sign_in="slack").exists()
    assert "Approved* by reviewer (in slack)" in final_text(slack, interrupt.pk)


def test_reject_in_slack_asks_for_a_reason_in_a_form(users: dict[str, User],
                                                     slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    linked(users["reviewer"], "U1")
    press(slack, interrupt.pk, "reject", "U1")
    [opened] = slack.of("views.open")
    assert not Answer.objects.filter(interrupt=interrupt).exists()
    reply = post(submission(opened.args["view"], "U1", {"text": "not on a Friday"}))
    assert reply.status_code == 200
    answer = Answer.objects.get(interrupt=interrupt)
    assert (answer.value, answer.steering, answer.sign_in) == (False, "not on a Friday", "slack")
    assert "Rejected: not on a Friday* by reviewer" in final_text(slack, interrupt.pk)


def test_an_answer_on_the_page_updates_the_message(users: dict[str, User],
                                                   slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    client = Client()
    client.force_login(users["reviewer"])
    client.post(f"/interrupts/{interrupt.pk}/answer/", {"action": "approve", "where": "page"})
    assert Interrupt.objects.get(pk=interrupt.pk).status == "answered"
    assert "Approved* by reviewer" in final_text(slack, interrupt.pk)


def test_a_deadline_answer_updates_the_message(users: dict[str, User],
                                               slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"], deadline_s=60, default=False)
    [done] = deadlines.expire_interrupts(timezone.now() + timedelta(minutes=2))
    assert done.outcome == "defaulted"
    assert "Rejected* by its deadline" in final_text(slack, interrupt.pk)


def test_a_cancelled_run_updates_the_message(users: dict[str, User],
                                             slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    services.cancel_run(users["supervisor"], interrupt.run_id)
    assert "Cancelled" in final_text(slack, interrupt.pk)


def test_an_unlinked_slack_user_is_told_how_to_link_and_nothing_is_decided(
        users: dict[str, User], slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    assert press(slack, interrupt.pk, "approve", "U404").status_code == 200
    [told] = ephemerals(slack, "U404")
    assert "not linked" in told and "/slack/link/" in told and "link_slack" in told
    assert Interrupt.objects.get(pk=interrupt.pk).status == "pending"
    assert not Answer.objects.exists()


def test_a_wrong_signature_is_refused_and_decides_nothing(users: dict[str, User],
                                                          slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    linked(users["reviewer"], "U1")
    payload = press_of(slack, interrupt.pk, "approve", "U1")
    reply = post(payload, secret="not-the-secret")
    assert reply.status_code == 401 and "signature" in reply.json()["error"]
    assert Interrupt.objects.get(pk=interrupt.pk).status == "pending"


def test_a_replayed_press_older_than_five_minutes_is_refused(users: dict[str, User],
                                                             slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    linked(users["reviewer"], "U1")
    payload = press_of(slack, interrupt.pk, "approve", "U1")
    assert post(payload, at=time.time() - 6 * 60).status_code == 401
    assert Interrupt.objects.get(pk=interrupt.pk).status == "pending"
    assert post(payload).status_code == 200  # the same press, fresh: taken
    assert Interrupt.objects.get(pk=interrupt.pk).status == "answered"


def test_bad_requests_get_a_4xx_with_a_message(users: dict[str, User],
                                              slack: SlackStandIn) -> None:
    _, headers = signed_body(SECRET, {})
    headers["X-Slack-Request-Timestamp"] = "soon"
    assert Client().post("/slack/events", "payload=%7B%7D", headers=headers,
                         content_type="application/x-www-form-urlencoded").status_code == 401
    body, at = "payload=%7Bnot-json", str(int(time.time()))
    digest = hmac.new(SECRET.encode(), f"v0:{at}:{body}".encode(), hashlib.sha256).hexdigest()
    reply = Client().post("/slack/events", body, content_type="application/x-www-form-urlencoded",
                          headers={"X-Slack-Request-Timestamp": at,
                                   "X-Slack-Signature": f"v0={digest}"})
    assert reply.status_code == 400 and "payload" in reply.json()["error"]


def test_slack_events_is_404_with_a_message_until_configured(settings: Any) -> None:
    settings.FORGE_SLACK_BOT_TOKEN = settings.FORGE_SLACK_SIGNING_SECRET = ""
    reply = Client().post("/slack/events", "payload={}",
                          content_type="application/x-www-form-urlencoded")
    assert reply.status_code == 404 and "FORGE_SLACK_SIGNING_SECRET" in reply.json()["error"]


def test_a_button_pressed_twice_decides_once(users: dict[str, User],
                                            slack: SlackStandIn) -> None:
    interrupt = ask(users["supervisor"])
    linked(users["reviewer"], "U1")
    payload = press_of(slack, interrupt.pk, "approve", "U1")
    assert post(payload).status_code == post(payload).status_code == 200
    assert Answer.objects.filter(interrupt=interrupt).count() == 1
    [told] = ephemerals(slack, "U1")
    assert told.startswith("Not counted:") and "reviewer" in told


def test_two_people_pressing_at_once_decide_once(team: dict[str, User],
                                                 slack: SlackStandIn) -> None:
    interrupt = ask(team["supervisor"])
    linked(team["alice"], "UA")
    linked(team["bob"], "UB")
    shown = message_of(slack, interrupt.pk)
    button = buttons(shown["blocks"])["approve"]
    start = threading.Barrier(2)
    codes: list[int] = []

    def press_as(slack_user: str) -> None:
        try:
            start.wait()
            codes.append(post(press_payload(button, slack_user, shown["channel"],
                                            shown["ts"])).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=press_as, args=(u,)) for u in ("UA", "UB")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert codes == [200, 200]
    assert Answer.objects.filter(interrupt=interrupt).count() == 1
    assert Run.objects.get(pk=interrupt.run_id).status == "completed"
    told = ephemerals(slack, "UA") + ephemerals(slack, "UB")
    assert len(told) == 1 and told[0].startswith("Not counted:")


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_self_approval_from_slack_is_refused(team: dict[str, User],
                                             slack: SlackStandIn) -> None:
    services.start_run(team["supervisor"], "signoff", {"payload": {}})
    interrupt = pending("signoff")
    linked(team["supervisor"], "US")
    press(slack, interrupt.pk, "approve", "US")
    assert not Approval.objects.exists() and not Answer.objects.exists()
    [told] = ephemerals(slack, "US")
    assert told.startswith("Not decided:") and "started" in told
    assert AuditEntry.objects.filter(action="answer.denied", sign_in="slack").exists()


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_two_approvals_from_slack_count_then_decide(team: dict[str, User],
                                                    slack: SlackStandIn) -> None:
    services.start_run(team["supervisor"], "signoff", {"payload": {}})
    interrupt = pending("signoff")
    linked(team["alice"], "UA")
    linked(team["bob"], "UB")
    press(slack, interrupt.pk, "approve", "UA")
    assert ephemerals(slack, "UA") == [
        "Your approve was counted: 1 of 2 approvals: alice; waiting for one more from finance"]
    assert "1 of 2 approvals: alice" in text_of(message_of(slack, interrupt.pk)["blocks"])
    press(slack, interrupt.pk, "approve", "UB")
    assert Run.objects.get(pk=interrupt.run_id).status == "completed"
    assert "by bob (in slack)" in final_text(slack, interrupt.pk)
