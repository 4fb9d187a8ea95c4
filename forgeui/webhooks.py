"""Notifications (issue 8): outgoing webhooks and e-mail to assignees.

They follow the inbox's ``Event`` table, never the run itself: ``fan_out`` (the scheduler
calls it every tick) reads the events after a stored cursor, turns the ones webhooks care
about into ``WebhookDelivery`` rows and enqueues a task per delivery, and e-mails the
assignees of new (or newly assigned) interrupts. A slow or failing endpoint therefore
costs a notification task its retries, never a run its progress.

Each request carries ``X-Forge-Event``, ``X-Forge-Delivery`` and ``X-Forge-Signature:
sha256=<hex>``, an HMAC-SHA256 of the exact body bytes under the webhook's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import egress
from .mail import send_quietly
from .models import (
    DeliveryStatus,
    Event,
    EventKind,
    Interrupt,
    NotificationCursor,
    Run,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
    assignees,
)

logger = logging.getLogger(__name__)

BATCH = 500
TIMEOUT_S = 5.0
SIGNATURE_HEADER = "X-Forge-Signature"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff() -> list[float]:
    """Seconds to wait before each retry; its length is the number of retries."""
    return list(getattr(settings, "FORGE_WEBHOOK_BACKOFF", [1, 4, 16]))


# -- events -> deliveries ----------------------------------------------------------------


def fan_out() -> list[int]:
    """Hand the events since the cursor to webhooks and e-mail; the deliveries made."""
    from .tasks import deliver_webhook_task, email_assignees_task

    with transaction.atomic():
        cursor, _ = NotificationCursor.objects.select_for_update().get_or_create(pk=1)
        events = list(Event.objects.after(cursor.last_event_id)[:BATCH])
        if not events:
            return []
        hooks = list(Webhook.objects.filter(active=True))
        made, mail = [], []
        for event in events:
            name = webhook_event(event)
            if name and (listening := [h for h in hooks if name in h.events]):
                made += deliveries(event, name, listening)
            if name == WebhookEvent.INTERRUPT_CREATED or event.data.get("action") == \
                    "interrupt.assign":
                mail.append(event.interrupt_id)
        cursor.last_event_id = events[-1].id
        cursor.save(update_fields=["last_event_id"])
        for delivery_id in made:
            transaction.on_commit(partial(deliver_webhook_task.enqueue, delivery_id))
        for interrupt_id in dict.fromkeys(mail):
            transaction.on_commit(partial(email_assignees_task.enqueue, interrupt_id))
    return made


def webhook_event(event: Event) -> str | None:
    """The webhook event an inbox event is, if any."""
    if event.kind in (EventKind.INTERRUPT_CREATED, EventKind.INTERRUPT_ANSWERED):
        return str(event.kind)
    if event.kind == EventKind.INTERRUPT_UPDATED and event.data.get("action") == \
            "interrupt.overdue":
        return WebhookEvent.INTERRUPT_OVERDUE
    status = event.data.get("status")
    if event.kind == EventKind.RUN_UPDATED and status in ("completed", "failed"):
        root = Run.objects.filter(pk=event.run_id, parent_run__isnull=True).exists()
        return f"run.{status}" if root else None
    return None


def deliveries(event: Event, name: str, hooks: list[Webhook]) -> list[int]:
    body = describe(event, name)
    made = []
    for hook in hooks:
        delivery, created = WebhookDelivery.objects.get_or_create(
            webhook=hook, event_id=event.id, defaults={"event": name, "body": body})
        if created:
            made.append(delivery.pk)
    return made


def describe(event: Event, name: str) -> dict[str, Any]:
    """The JSON a receiver gets."""
    body: dict[str, Any] = {"event": name, "event_id": event.id,
                            "created_at": event.created_at.isoformat(),
                            "run_id": event.run_id, "thread_id": event.root_thread_id}
    interrupt = Interrupt.objects.filter(pk=event.interrupt_id).first() \
        if event.interrupt_id else None
    if interrupt is not None:
        body["interrupt"] = {
            "id": interrupt.pk, "node": interrupt.node, "payload": interrupt.payload,
            "status": interrupt.status, "namespace": interrupt.namespace,
            "deadline_at": interrupt.deadline_at.isoformat() if interrupt.deadline_at else None,
            "assignees": {"users": interrupt.assigned_users,
                          "groups": interrupt.assigned_groups}}
    run = Run.objects.filter(pk=event.run_id).first() if event.run_id else None
    if run is not None:
        body["run"] = {"run_id": run.run_id, "graph": run.graph, "status": run.status,
                       "output": run.output if run.status == "completed" else None,
                       "error": run.error}
    return body


# -- sending -----------------------------------------------------------------------------


def deliver(delivery_id: int, sleep: Callable[[float], None] = time.sleep) -> str:
    """POST one delivery, retrying with backoff; every attempt is counted on its row."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status != DeliveryStatus.PENDING:
        return str(delivery.status)
    body = json.dumps(delivery.body, separators=(",", ":"), sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "forge-webhooks/1",
               "X-Forge-Event": delivery.event, "X-Forge-Delivery": str(delivery.pk),
               SIGNATURE_HEADER: sign(delivery.webhook.secret, body)}
    waits = backoff()
    for attempt in range(delivery.attempts + 1, len(waits) + 2):
        code, error = post(delivery.webhook.url, body, headers)
        done = code is not None and 200 <= code < 300
        status = (DeliveryStatus.DELIVERED if done else DeliveryStatus.FAILED
                  if attempt > len(waits) else DeliveryStatus.PENDING)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            attempts=attempt, response_code=code, last_error=error, status=status,
            delivered_at=timezone.now() if done else None)
        if status != DeliveryStatus.PENDING:
            return str(status)
        sleep(waits[attempt - 1])
    return DeliveryStatus.FAILED


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str]:
    """(status code or None, error text); never raises. Private destinations and
    redirects are refused (``forgeui.egress``)."""
    try:
        code = egress.post(url, body, headers, TIMEOUT_S,
                           allow_private=settings.FORGE_WEBHOOK_ALLOW_PRIVATE)
    except egress.RefusedDestination as exc:
        return None, f"refused: {exc}"[:1000]
    except Exception as exc:  # refused, timed out, bad URL: all the receiver's problem
        return None, f"{type(exc).__name__}: {exc}"[:1000]
    if 300 <= code < 400:
        return code, f"HTTP {code}: redirects are not followed"
    return code, "" if 200 <= code < 300 else f"HTTP {code}"


# -- e-mail ------------------------------------------------------------------------------


def email_assignees(interrupt_id: str) -> int:
    """Tell an interrupt's named users (and its groups' members) by e-mail; how many."""
    interrupt = Interrupt.objects.filter(pk=interrupt_id).first()
    if interrupt is None or not interrupt.assignees or interrupt.status != "pending":
        return 0
    users, groups = assignees.decode(interrupt.assignees)
    to = sorted(set(get_user_model().objects.filter(
        Q(username__in=users) | Q(groups__name__in=groups), is_active=True)
        .exclude(email="").values_list("email", flat=True)))
    question = (interrupt.payload or {}).get("question") if isinstance(
        interrupt.payload, dict) else None
    return send_quietly(f"[forge] waiting for you: {question or interrupt.node}",
                        f"Interrupt {interrupt.pk} at {'/'.join(interrupt.namespace)} "
                        f"({interrupt.node}) is assigned to you. Answer it in the inbox.",
                        to, about=f"the assignees of {interrupt_id}")
