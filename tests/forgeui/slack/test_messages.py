"""The message each kind of interrupt gets in Slack, posted when it is created."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.requests import service
from forgeui.runs import services
from forgeui.slack.models import SlackMessage
from tests.forgeui.slack.conftest import CHANNEL, message_of, pending
from tests.forgeui.slack.standin import SlackStandIn, buttons, text_of

pytestmark = pytest.mark.django_db(transaction=True)

FOUR_EYES = {"payments": {"nodes": ["signoff/sign"], "approvals": 2, "groups": ["finance"]}}
THREE_CALLS = {"agent": {"name": "ops-bot"}, "actions": [
    {"name": "deploy", "args": {"version": "2.4.0"}, "description": "Ship the release"},
    {"name": "notify", "args": {"channel": "#ops"}, "decisions": ["approve", "reject"]},
    {"name": "scale", "args": {"replicas": 3}, "args_schema": {
        "type": "object", "required": ["replicas"],
        "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": 10}}}}]}


def test_a_plain_approval_gets_a_summary_fields_buttons_and_a_link(
        users: dict[str, User], slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "custom", {
        "question": "Ship it?", "payload": {"amount": 120},
        "options": {"deadline_s": 3600, "default": False}})
    interrupt = pending("custom")
    [posted] = slack.of("chat.postMessage")
    assert posted.args["channel"] == CHANNEL
    text = text_of(posted.args["blocks"])
    assert "Ship it?" in text and "*Graph* custom" in text and "amount 120" in text
    assert "*Deadline:* <!date^" in text
    assert f"/interrupts/{interrupt.pk}/|Open in forge>" in text
    assert set(buttons(posted.args["blocks"])) == {"approve", "reject"}
    row = SlackMessage.objects.get(interrupt=interrupt)
    assert row.ts and row.synced == row.wanted


def test_a_breakpoint_is_continued_or_its_run_cancelled(
        users: dict[str, User], slack: SlackStandIn, tmp_path: Any) -> None:
    services.start_run(users["supervisor"], "guarded",
                       {"version": "2.0.0", "ledger": str(tmp_path / "ledger")})
    shown = message_of(slack, pending("guarded").pk)
    assert "Paused before ship" in text_of(shown["blocks"])
    assert set(buttons(shown["blocks"])) == {"continue", "cancel"}


def test_an_agent_request_gets_choices_per_call(users: dict[str, User],
                                                slack: SlackStandIn) -> None:
    made = service.create(service.Caller(users["supervisor"], agent="ops-bot"), THREE_CALLS)
    shown = message_of(slack, pending("forge.request").pk)
    assert made.row.agent == "ops-bot"
    text = text_of(shown["blocks"])
    assert "`deploy`* Ship the release" in text and '"replicas": 3' in text
    assert set(buttons(shown["blocks"])) == {
        "approve:0", "edit:0", "reject:0", "respond:0", "approve:1", "reject:1",
        "approve:2", "edit:2", "reject:2", "respond:2"}


def test_a_langgraph_hitl_review_gets_its_allowed_decisions(
        users: dict[str, User], slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "lg_middleware",
                       {"to": "dana@example.com", "body": "the report", "outcome": ""})
    shown = message_of(slack, pending("lg_middleware").pk)
    assert "send_email" in text_of(shown["blocks"]) and "dana@example.com" in text_of(
        shown["blocks"])
    assert set(buttons(shown["blocks"])) == {"approve:0", "edit:0", "reject:0",
                                             "approve:1", "reject:1"}


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_a_two_approval_policy_says_where_it_stands(team: dict[str, User],
                                                     slack: SlackStandIn) -> None:
    services.start_run(team["supervisor"], "signoff", {"payload": {}})
    interrupt = pending("signoff")
    assert "*Policy payments:* 0 of 2 approvals" in text_of(
        message_of(slack, interrupt.pk)["blocks"])
    services.answer_interrupt(team["alice"], interrupt.pk, True)
    [update] = slack.of("chat.update")
    assert "1 of 2 approvals: alice; waiting for one more" in text_of(update.args["blocks"])
    assert set(buttons(update.args["blocks"])) == {"approve", "reject"}


def test_nothing_is_posted_until_slack_is_configured(users: dict[str, User],
                                                      slack: SlackStandIn,
                                                      settings: Any) -> None:
    settings.FORGE_SLACK_BOT_TOKEN = ""
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    assert slack.calls == [] and not SlackMessage.objects.exists()
