"""Approval requests' ``callback_url``: told once when their request ends.

Each request with a callback has its own inactive ``Webhook`` (inactive: the fan-out
never sends it other events), so deliveries, signatures, retries and the delivery log
are the webhooks' own.
"""

from __future__ import annotations

from typing import Any

from forgeui.models import (
    AgentRequest,
    Answer,
    Event,
    EventKind,
    Interrupt,
    InterruptStatus,
    WebhookDelivery,
)

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
        defaults={"event": name, "body": body(request, event, name)})
    return [delivery.pk] if created else []


def body(request: AgentRequest, event: Event, name: str) -> dict[str, Any]:
    """What the callback says: the request's ending, as ``GET /api/requests/{id}`` does."""
    answer = (Answer.objects.filter(interrupt_id=event.interrupt_id).order_by("-id")
              .select_related("user").first())
    value = answer.value if answer is not None and isinstance(answer.value, dict) else {}
    interrupt = Interrupt.objects.filter(pk=event.interrupt_id).first()
    status = "cancelled" if interrupt is None else ended_status(interrupt, answer)
    return {"event": name, "event_id": event.id, "request_id": request.pk, "status": status,
            "interrupt_id": event.interrupt_id, "created_at": event.created_at.isoformat(),
            "decisions": value.get("decisions") or [], "message": value.get("message"),
            "responder": answer.user.get_username() if answer and answer.user else None}


def ended_status(interrupt: Interrupt, answer: Answer | None) -> str:
    """``cancelled``, ``expired`` (its deadline answered: no person, no policy's rule) or
    ``decided``."""
    if interrupt.status == InterruptStatus.CANCELLED:
        return "cancelled"
    meta = answer.meta if answer is not None else {}
    by_deadline = interrupt.answered_by_id is None and interrupt.deadline_at is not None
    return "expired" if by_deadline and not meta.get("policy") else "decided"
