"""Notifications follow the inbox's ``Event`` table, never the run itself.

``fan_out`` (the scheduler calls it every tick) reads the events after a stored cursor,
turns the ones webhooks care about into ``WebhookDelivery`` rows and enqueues a task per
delivery, and e-mails the assignees of new (or newly assigned) interrupts. A slow or
failing endpoint therefore costs a notification task its retries, never a run its progress.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from forgeui.models import (
    Event,
    EventKind,
    Interrupt,
    NotificationCursor,
    Run,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
)
from forgeui.notifications.callbacks import callback_deliveries
from forgeui.notifications.tasks import deliver_webhook_task, email_assignees_task

BATCH = 500


def fan_out() -> list[int]:
    """Hand the events since the cursor to webhooks and e-mail; the deliveries made."""
    with transaction.atomic():
        cursor, _ = NotificationCursor.objects.select_for_update().get_or_create(pk=1)
        events = list(Event.objects.after(cursor.last_event_id)[:BATCH])
        if not events:
            return []
        hooks = list(Webhook.objects.filter(active=True))
        made, mail = [], []
        for event in events:
            made += callback_deliveries(event)
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
