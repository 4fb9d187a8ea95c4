"""Notifications: webhooks with retries and an HMAC signature, e-mail to assignees.

The receiver is a real HTTP server on 127.0.0.1 (``http.server`` in a thread); e-mail is
captured by Django's locmem backend. Retries wait ``FORGE_WEBHOOK_BACKOFF`` (zeros here).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client, override_settings

from forgeui.models import DeliveryStatus, Interrupt, Webhook, WebhookDelivery
from forgeui.notifications import egress, fanout, webhooks
from forgeui.runs import services
from tests.processes import serve_in_background

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cret"


@pytest.fixture(autouse=True)
def private_receivers(settings: Any) -> None:
    """The receivers here listen on 127.0.0.1, which production refuses by default."""
    settings.FORGE_WEBHOOK_ALLOW_PRIVATE = True


class Receiver:
    """Answers 500 ``failures`` times, then 200 (or ``redirect``); keeps what it was sent."""

    def __init__(self, failures: int, redirect: str = "") -> None:
        self.failures, self.redirect = failures, redirect
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append((dict(self.headers), body))
                failing = len(receiver.received) <= receiver.failures
                self.send_response(500 if failing else 307 if receiver.redirect else 200)
                if receiver.redirect:
                    self.send_header("Location", receiver.redirect)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(failures=2)
    serve_in_background(made.server)
    yield made
    made.server.shutdown()
    made.server.server_close()


def test_a_failing_receiver_gets_three_attempts_and_one_signed_delivery(
        users: dict[str, User], receiver: Receiver) -> None:
    Webhook.objects.create(name="ops", url=receiver.url, secret=SECRET,
                           events=["interrupt.created"])
    started = services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    [delivery_id] = fanout.fan_out()  # the immediate backend delivered it on commit
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
    assert fanout.fan_out() == []  # the cursor moved on: nothing is sent twice


def test_a_dead_endpoint_fails_the_delivery_not_the_run(users: dict[str, User]) -> None:
    Webhook.objects.create(name="dead", url="http://127.0.0.1:9/nothing", secret=SECRET,
                           events=["interrupt.answered", "run.completed"])
    started = services.start_run(users["supervisor"], "custom", {})
    interrupt = Interrupt.objects.of_tree(started.thread_id).pending().get()
    services.answer_interrupt(users["reviewer"], interrupt.pk, True)
    assert Interrupt.objects.get(pk=interrupt.pk).run.status == "completed"
    fanout.fan_out()
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
    fanout.fan_out()
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


def serving(made: Receiver) -> Receiver:
    serve_in_background(made.server)
    return made


@pytest.mark.parametrize(("address", "inside"), [
    ("127.0.0.1", True), ("10.1.2.3", True), ("169.254.169.254", True), ("::1", True),
    ("::ffff:127.0.0.1", True), ("fe80::1", True), ("0.0.0.0", True), ("8.8.8.8", False),
    ("2606:4700:4700::1111", False),
    # Carrier-grade NAT (cloud metadata at 100.100.100.200), 6to4, site-local, Teredo, NAT64.
    ("100.100.100.200", True), ("100.64.0.1", True), ("100.127.255.254", True),
    ("100.128.0.1", False), ("2002:a9fe:a9fe::1", True), ("2002:808:808::1", True),
    ("fec0::1", True), ("feff::1", True), ("2001:0:4136:e378::1", True),
    ("64:ff9b::a9fe:a9fe", True),
])
def test_private_loopback_and_link_local_addresses_are_blocked(address: str,
                                                               inside: bool) -> None:
    assert egress.blocked(address) is inside


def test_by_default_a_webhook_to_a_private_address_is_refused_unsent(
        users: dict[str, User], receiver: Receiver, settings: Any) -> None:
    settings.FORGE_WEBHOOK_ALLOW_PRIVATE = False
    Webhook.objects.create(name="inside", url=receiver.url, secret=SECRET,
                           events=["interrupt.created"])
    services.start_run(users["supervisor"], "custom", {})
    [delivery_id] = fanout.fan_out()
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.status == DeliveryStatus.FAILED and receiver.received == []
    assert "refused" in delivery.last_error and "127.0.0.1" in delivery.last_error


def test_redirects_are_not_followed(users: dict[str, User]) -> None:
    target = serving(Receiver(failures=0))
    bouncer = serving(Receiver(failures=0, redirect=target.url))
    try:
        assert webhooks.post(bouncer.url, b"{}", {}) == (
            307, "HTTP 307: redirects are not followed")
        assert len(bouncer.received) == 1 and target.received == []
    finally:
        for made in (target, bouncer):
            made.server.shutdown()
            made.server.server_close()


def test_the_host_is_resolved_once_and_the_checked_address_is_the_one_used(
        receiver: Receiver, monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """A rebinding DNS answers a public address to the check and a private one later:
    forge asks once, and connects to what it checked."""
    real = socket.getaddrinfo
    asked: list[str] = []
    port = receiver.server.server_address[1]

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != "hooks.example.test":
            return real(host, *args, **kwargs)
        asked.append(host)
        address = "127.0.0.1" if len(asked) == 1 else "10.0.0.99"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = f"http://hooks.example.test:{port}/hook"
    assert webhooks.post(url, b"{}", {})[0] == 500  # reached the receiver (it fails twice)
    assert asked == ["hooks.example.test"]
    assert receiver.received[0][0]["Host"] == f"hooks.example.test:{port}"
    settings.FORGE_WEBHOOK_ALLOW_PRIVATE = False
    code, error = webhooks.post(url, b"{}", {})
    assert code is None and "refused" in error and len(receiver.received) == 1
