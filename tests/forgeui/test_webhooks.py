"""Notifications (issue 8): webhooks with retries and an HMAC signature, e-mail to assignees.

The receiver is a real HTTP server on 127.0.0.1 (``http.server`` in a thread); e-mail is
captured by Django's locmem backend. Retries wait ``FORGE_WEBHOOK_BACKOFF`` (zeros here).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client, override_settings

from forgeui import services, webhooks
from forgeui.models import DeliveryStatus, Interrupt, Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cret"


class Receiver:
    """Answers 500 ``failures`` times, then 200; keeps what it was sent."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                failing = len(receiver.received) <= receiver.failures
                self.send_response(500 if failing else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(failures=2)
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    yield made
    made.server.shutdown()
    made.server.server_close()


def test_a_failing_receiver_gets_three_attempts_and_one_signed_delivery(
        users: dict[str, User], receiver: Receiver) -> None:
    Webhook.objects.create(name="ops", url=receiver.url, secret=SECRET,
                           events=["interrupt.created"])
    started = services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    [delivery_id] = webhooks.fan_out()  # the immediate backend delivered it on commit
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.status == DeliveryStatus.DELIVERED
    assert delivery.attempts == 3 and delivery.response_code == 200
    assert WebhookDelivery.objects.count() == 1
    assert len(receiver.received) == 3
    headers, body = receiver.received[-1]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Forge-Signature"], expected)
    sent = json.loads(body)
    assert sent["event"] == "interrupt.created" and sent["thread_id"] == started.thread_id
    assert sent["interrupt"]["payload"]["question"] == "Ship it?"
    assert webhooks.fan_out() == []  # the cursor moved on: nothing is sent twice


def test_a_dead_endpoint_fails_the_delivery_not_the_run(users: dict[str, User]) -> None:
    Webhook.objects.create(name="dead", url="http://127.0.0.1:9/nothing", secret=SECRET,
                           events=["interrupt.answered", "run.completed"])
    started = services.start_run(users["supervisor"], "custom", {})
    interrupt = Interrupt.objects.of_tree(started.thread_id).pending().get()
    services.answer_interrupt(users["reviewer"], interrupt.pk, True)
    assert Interrupt.objects.get(pk=interrupt.pk).run.status == "completed"
    webhooks.fan_out()
    events = sorted(WebhookDelivery.objects.values_list("event", "status", "attempts"))
    assert events == [("interrupt.answered", "failed", 4), ("run.completed", "failed", 4)]


@override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend")
def test_assignees_are_emailed(users: dict[str, User]) -> None:
    finance = Group.objects.create(name="finance")
    alice = User.objects.create_user("alice", email="alice@example.com")
    alice.groups.add(finance)
    User.objects.create_user("carol", email="carol@example.com")
    services.start_run(users["supervisor"], "custom",
                       {"question": "Pay?", "options": {"assignees": {"groups": ["finance"]}}})
    services.start_run(users["supervisor"], "custom", {"question": "Nobody named"})
    webhooks.fan_out()
    [message] = mail.outbox
    assert message.to == ["alice@example.com"] and "Pay?" in message.subject


def test_webhooks_are_configured_in_the_admin(users: dict[str, User]) -> None:
    admin = User.objects.create_superuser("root", password="root")
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/forgeui/webhook/add/", {
        "name": "ops", "url": "https://hooks.example.com/forge", "secret": "k",
        "events": ["interrupt.overdue", "run.failed"], "active": "on"})
    assert response.status_code == 302, response.content[:2000]
    assert Webhook.objects.get().events == ["interrupt.overdue", "run.failed"]
    assert client.get("/admin/forgeui/webhookdelivery/").status_code == 200
