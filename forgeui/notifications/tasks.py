"""The notification tasks, on their own pool (``notify``) so a slow receiver never holds
up a run."""

from __future__ import annotations

from typing import Any

from django_tasks import task

from forgeui.notifications import mail, webhooks


@task(backend="notify")
def deliver_webhook_task(delivery_id: int) -> dict[str, Any]:
    """Send one webhook delivery, with its retries (on the notification pool)."""
    return {"delivery_id": delivery_id, "status": webhooks.deliver(delivery_id)}


@task(backend="notify")
def email_assignees_task(interrupt_id: str) -> dict[str, Any]:
    return {"interrupt_id": interrupt_id, "sent_to": mail.email_assignees(interrupt_id)}
