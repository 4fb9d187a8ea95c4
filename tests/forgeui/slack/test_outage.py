"""Slack down never blocks an answer; messages left behind are posted once it is back."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Run
from forgeui.runs import services
from forgeui.slack import delivery
from forgeui.slack.models import SlackMessage
from forgeui.slack.tasks import resync_task
from tests.forgeui.slack.conftest import pending
from tests.forgeui.slack.standin import SlackStandIn, buttons, text_of

pytestmark = pytest.mark.django_db(transaction=True)


def dead_url() -> str:
    """A port nothing listens on: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/api/"


def test_slack_down_then_back(users: dict[str, User], slack: SlackStandIn,
                              settings: Any) -> None:
    up = settings.FORGE_SLACK_API_URL
    settings.FORGE_SLACK_API_URL = dead_url()
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    interrupt = pending("custom")
    row = SlackMessage.objects.get(interrupt=interrupt)
    assert not row.ts and row.synced < row.wanted and row.attempts == 3  # 1 + 2 retries
    assert "Connection refused" in row.last_error or "URLError" in row.last_error

    client = Client()
    client.force_login(users["reviewer"])
    client.post(f"/interrupts/{interrupt.pk}/answer/", {"action": "approve", "where": "page"})
    assert Run.objects.get(pk=interrupt.run_id).status == "completed"
    assert slack.calls == []

    settings.FORGE_SLACK_API_URL = up
    resync_task.enqueue()
    [posted] = slack.of("chat.postMessage")
    assert buttons(posted.args["blocks"]) == {}
    assert "Approved* by reviewer" in text_of(posted.args["blocks"])
    row.refresh_from_db()
    assert row.ts and row.synced == row.wanted and row.attempts == 0 and not row.last_error
    assert delivery.resync() == []  # nothing left behind


def test_an_update_that_failed_is_retried(users: dict[str, User], slack: SlackStandIn,
                                          settings: Any) -> None:
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    interrupt = pending("custom")
    up, settings.FORGE_SLACK_API_URL = settings.FORGE_SLACK_API_URL, dead_url()
    services.answer_interrupt(users["reviewer"], interrupt.pk, True)
    assert slack.of("chat.update") == []
    settings.FORGE_SLACK_API_URL = up
    assert delivery.resync() == [interrupt.pk]
    [update] = slack.of("chat.update")
    assert update.args["ts"] == SlackMessage.objects.get(interrupt=interrupt).ts
    assert "Approved* by reviewer" in text_of(update.args["blocks"])


def test_a_message_being_synced_elsewhere_is_not_posted_twice(
        users: dict[str, User], slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    interrupt = pending("custom")
    row = SlackMessage.objects.get(interrupt=interrupt)
    row.wanted += 1
    row.save()
    held = delivery.lease(row.pk)
    assert held is not None
    assert delivery.sync(interrupt.pk) == "busy"
    assert delivery.lease(row.pk) is None
    assert len(slack.of("chat.postMessage")) == 1 and slack.of("chat.update") == []
