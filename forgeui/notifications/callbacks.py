"""Approval requests' ``callback_url``: told once when their request ends.

Each request with a callback has its own inactive ``Webhook`` (inactive: the fan-out
never sends it other events), so deliveries, signatures, retries and the delivery log
are the webhooks' own.
"""

from __future__ import annotations

from typing import Any

from forgeui.models import AgentRequest, Answer, Event, EventKind, WebhookDelivery

ENDING = {EventKind.INTERRUPT_ANSWERED: "request.decided",
          EventKind.INTERRUPT_CANCELLED: "request.cancelled"}


def callback_deliveries(event: Event) -> list[int]:
    """The delivery to make for ``event`` if it ends a request with a callback."""
    name = ENDING.get(EventKind(event.kind)) if event.kind in ENDING else None
    if name is None or not event.root_thread_id:
        return []
    request = (AgentRequest.objects.filter(pk=event.root_thread_id, callback__isnull=False)
               .select_related("callback").first())
    if request is None or request.callback is None:
        return []
    delivery, created = WebhookDelivery.objects.get_or_create(
        webhook=request.callback, event_id=event.id,
        defaults={"event": "interrupt.answered", "body": body(request, event, name)})
    return [delivery.pk] if created else []


def body(request: AgentRequest, event: Event, name: str) -> dict[str, Any]:
    answer = (Answer.objects.filter(interrupt_id=event.interrupt_id).order_by("-id")
              .select_related("user").first())
    value = answer.value if answer is not None and isinstance(answer.value, dict) else {}
    return {"event": name, "event_id": event.id, "request_id": request.pk,
            "interrupt_id": event.interrupt_id, "created_at": event.created_at.isoformat(),
            "decisions": value.get("decisions") or [], "message": value.get("message"),
            "responder": answer.user.get_username() if answer and answer.user else None}
