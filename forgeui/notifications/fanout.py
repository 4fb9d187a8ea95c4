"""Notifications follow the inbox's ``Event`` table, never the run itself.

``fan_out`` (the scheduler calls it every tick) reads the events after a stored cursor,
turns the ones webhooks care about into ``WebhookDelivery`` rows and enqueues a task per
delivery, and e-mails the assignees of new (or newly assigned) interrupts. A slow or
failing endpoint therefore costs a notification task its retries, never a run its progress.

With teams, a webhook scoped to a team (``Webhook.team``) hears only that team's events;
payloads travel with their sensitive keys masked, whoever receives them.
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
from forgeui.team.sensitive import mask, masked_payload

BATCH = 500


def fan_out() -> list[int]:
    """Hand the events since the cursor to webhooks and e-mail; the deliveries made."""
    with transaction.atomic():
        cursor, _ = NotificationCursor.objects.select_for_update().get_or_create(pk=1)
        events = list(Event.objects.after(cursor.last_event_id).with_team()[:BATCH])
        if not events:
            return []
        hooks = Hooks()
        made, mail = [], []
        for event in events:
            made += callback_deliveries(event)
            name = webhook_event(event)
            if name and (listening := hooks.listening(name, event.team)):
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


class Hooks:
    """The active webhooks, read once per team a batch of events is about."""

    def __init__(self) -> None:
        self.of_team: dict[str | None, list[Webhook]] = {}

    def listening(self, name: str, team: str | None) -> list[Webhook]:
        """Those told of event ``name`` about an object of ``team`` (``Webhook.for_team``;
        the events they want are a JSON list, picked here)."""
        if team not in self.of_team:
            self.of_team[team] = list(Webhook.objects.filter(active=True).for_team(team))
        return [hook for hook in self.of_team[team] if name in hook.events]


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
                            "run_id": event.run_id, "thread_id": event.root_thread_id,
                            "team": getattr(event, "team", None) or ""}
    interrupt = Interrupt.objects.filter(pk=event.interrupt_id).first() \
        if event.interrupt_id else None
    if interrupt is not None:
        body["interrupt"] = {
            "id": interrupt.pk, "node": interrupt.node, "payload": masked_payload(interrupt),
            "status": interrupt.status, "namespace": interrupt.namespace,
            "deadline_at": interrupt.deadline_at.isoformat() if interrupt.deadline_at else None,
            "assignees": {"users": interrupt.assigned_users,
                          "groups": interrupt.assigned_groups}}
    run = Run.objects.filter(pk=event.run_id).first() if event.run_id else None
    if run is not None:
        output = run.output if run.status == "completed" else None
        body["run"] = {"run_id": run.run_id, "graph": run.graph, "status": run.status,
                       "output": mask(output, sensitive_keys(run)), "error": run.error}
    return body


def sensitive_keys(run: Run) -> set[str]:
    """The keys any interrupt of ``run``'s tree marked sensitive: its output may repeat
    them (an edited argument, say)."""
    marked = Interrupt.objects.of_tree(run.root_thread_id).values_list("sensitive", flat=True)
    return {str(key) for keys in marked for key in keys or ()}
