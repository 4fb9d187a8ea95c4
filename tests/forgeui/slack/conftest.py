"""Slack configured against a local stand-in of its Web API, and the people who answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from forgeui.models import Interrupt
from forgeui.slack.models import SlackMessage
from tests.forgeui.slack.standin import SlackStandIn, buttons, press_payload, signed_body

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0FORGE"


@pytest.fixture
def slack(settings: Any) -> Iterator[SlackStandIn]:
    with SlackStandIn() as standin:
        settings.FORGE_SLACK_BOT_TOKEN = "xoxb-test"
        settings.FORGE_SLACK_SIGNING_SECRET = SECRET
        settings.FORGE_SLACK_CHANNEL = CHANNEL
        settings.FORGE_SLACK_API_URL = standin.url
        settings.FORGE_SLACK_BACKOFF = [0, 0]
        yield standin


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """alice and bob (reviewers in finance); the supervisor starts runs, in finance too."""
    finance = Group.objects.create(name="finance")
    reviewer = Group.objects.get(name="reviewer")
    made = dict(users)
    for name in ("alice", "bob"):
        made[name] = User.objects.create_user(name, password=name, email=f"{name}@example.com")
        made[name].groups.add(reviewer, finance)
    users["supervisor"].groups.add(finance)
    return made


def message_of(slack: SlackStandIn, interrupt_id: str) -> dict[str, Any]:
    """The latest blocks (and channel, ts) Slack was sent for this interrupt."""
    row = SlackMessage.objects.get(interrupt_id=interrupt_id)
    sent = [c for c in slack.calls if c.method in ("chat.postMessage", "chat.update")
            and (c.args.get("ts") in (None, row.ts))]
    assert sent, f"nothing was sent to Slack for {interrupt_id}"
    return {**sent[-1].args, "channel": row.channel, "ts": row.ts}


def post(payload: dict[str, Any], secret: str = SECRET, at: float | None = None) -> Any:
    body, headers = signed_body(secret, payload, at)
    return Client().post("/slack/events", body, content_type="application/x-www-form-urlencoded",
                         headers=headers)


def press_of(slack: SlackStandIn, interrupt_id: str, action_id: str,
             slack_user: str) -> dict[str, Any]:
    """The payload Slack sends when ``slack_user`` presses a button of the message."""
    shown = message_of(slack, interrupt_id)
    button = buttons(shown["blocks"])[action_id]
    return press_payload(button, slack_user, shown["channel"], shown["ts"])


def press(slack: SlackStandIn, interrupt_id: str, action_id: str, slack_user: str) -> Any:
    """Press a button of the interrupt's message as ``slack_user``, as Slack sends it."""
    return post(press_of(slack, interrupt_id, action_id, slack_user))


def ephemerals(slack: SlackStandIn, slack_user: str) -> list[str]:
    return [c.args["text"] for c in slack.of("chat.postEphemeral")
            if c.args.get("user") == slack_user]


def pending(graph: str) -> Interrupt:
    return Interrupt.objects.select_related("run").get(run__graph=graph, status="pending")
