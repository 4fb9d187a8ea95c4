"""A request's ``callback_url`` is told how it ended: the event its header names is the one
its body names, with the status ``GET /api/requests/{id}`` reads. A real receiver on
127.0.0.1 takes the posts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import ApiToken, Interrupt
from forgeui.notifications import fanout
from forgeui.requests import service
from forgeui.runs import deadlines
from tests.forgeui.notifications.test_webhooks import Receiver
from tests.processes import serve_in_background

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.FORGE_WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on 127.0.0.1
    made = Receiver(failures=0)
    serve_in_background(made.server)
    yield made
    made.server.shutdown()
    made.server.server_close()


@pytest.fixture
def bot() -> str:
    return ApiToken.objects.issue(User.objects.create_user("agent:bot"), agent="bot")[1]


def ask(bot: str, receiver: Receiver, **fields: Any) -> str:
    response = Client().post("/api/requests", {
        "actions": [{"name": "pay", "args": {"amount": 5}}], "callback_url": receiver.url,
        **fields}, content_type="application/json", headers={"Authorization": f"Bearer {bot}"})
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def told(receiver: Receiver) -> tuple[str, dict[str, Any]]:
    """The one callback posted: its ``X-Forge-Event`` and its body."""
    fanout.fan_out()
    [(headers, body)] = receiver.received
    return headers["X-Forge-Event"], json.loads(body)


def test_a_decided_request_is_told_decided(users: dict[str, User], bot: str,
                                           receiver: Receiver) -> None:
    request_id = ask(bot, receiver)
    service.decide(users["reviewer"], request_id, [{"type": "reject", "message": "no"}])
    event, body = told(receiver)
    assert event == body["event"] == "request.decided"
    assert body["status"] == "decided" and body["request_id"] == request_id
    assert body["decisions"] == [{"type": "reject", "message": "no"}]


def test_an_expired_request_is_told_expired(users: dict[str, User], bot: str,
                                            receiver: Receiver) -> None:
    request_id = ask(bot, receiver, deadline_s=5)
    created = Interrupt.objects.get(root_thread_id=request_id).created_at
    deadlines.expire_interrupts(now=created + timedelta(seconds=6))
    event, body = told(receiver)
    assert event == body["event"] == "request.decided" and body["status"] == "expired"


def test_a_withdrawn_request_is_told_cancelled(users: dict[str, User], bot: str,
                                               receiver: Receiver) -> None:
    request_id = ask(bot, receiver)
    assert service.withdraw(service.agent_for_token(bot), request_id)
    event, body = told(receiver)
    assert event == body["event"] == "request.cancelled" and body["status"] == "cancelled"
