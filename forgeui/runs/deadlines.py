"""Deadlines: interrupts past theirs are answered with their default, or marked overdue.

The scheduler's periodic task (and ``manage.py expire_interrupts``) calls
``expire_interrupts``; a default goes through ``services.answer_interrupt`` like any answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Literal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from forgeui.models import Interrupt
from forgeui.notifications.mail import send_with_links
from forgeui.permissions.roles import Role
from forgeui.runs import services
from forgeui.runs.exceptions import Forbidden, GraphUnavailable, InvalidRequest, StaleAnswer
from forgeui.runs.policies import escalation


@dataclass(frozen=True, slots=True)
class Expiry:
    """What the deadline sweep did to one interrupt."""

    interrupt_id: str
    outcome: Literal["defaulted", "overdue", "skipped", "escalated"]
    reason: str


def expire_interrupts(now: datetime | None = None) -> list[Expiry]:
    """Handle every pending interrupt past its deadline (the periodic task calls this),
    and escalate those that waited past their approval policy's ``escalate_after_s``.

    With a default it is answered by the system (``user=None``) with that default, through
    ``answer_interrupt`` like any answer; without one (or when the default fails the
    answer schema) it is marked overdue and the supervisors are told. Each step is
    audited with its reason. ``now`` is for tests; it defaults to the clock.
    """
    now = now or timezone.now()
    escalated = [Expiry(pk, "escalated", "unanswered past its policy's escalate_after_s")
                 for pk in escalation.escalate_due(now)]
    return escalated + [_expire(interrupt, now)
                        for interrupt in Interrupt.objects.overdue(now).select_related("run")[:500]]


def _expire(interrupt: Interrupt, now: datetime) -> Expiry:
    reason = f"deadline {interrupt.deadline_at} passed"
    if interrupt.has_default:
        try:
            decided = services.answer_interrupt(None, interrupt.pk, interrupt.default)
        except StaleAnswer:  # someone answered just in time
            return Expiry(interrupt.pk, "skipped", "answered before the deadline sweep")
        except (InvalidRequest, GraphUnavailable, Forbidden) as exc:  # Forbidden: a policy
            reason = f"{reason}; its default was refused: {exc}"
        else:
            services.audit(None, "interrupt.expired", object_type="interrupt",
                           object_id=interrupt.pk, run_id=interrupt.run_id,
                           thread_id=interrupt.root_thread_id,
                           detail={"reason": f"{reason}: answered with its default",
                                   "default": interrupt.default,
                                   "answer_id": decided.made.pk})
            return Expiry(interrupt.pk, "defaulted", reason)
    return _mark_overdue(interrupt, now, reason)


def _mark_overdue(interrupt: Interrupt, now: datetime, reason: str) -> Expiry:
    with transaction.atomic():
        marked = Interrupt.objects.overdue(now).filter(pk=interrupt.pk).update(overdue_at=now)
        if not marked:
            return Expiry(interrupt.pk, "skipped", "handled by another sweep")
        services.changed(None, "interrupt.overdue", interrupt,
                         {"reason": f"{reason}; no default: supervisors notified"})
        transaction.on_commit(partial(notify_supervisors, interrupt.pk, reason))
    return Expiry(interrupt.pk, "overdue", reason)


def notify_supervisors(interrupt_id: str, reason: str) -> None:
    """E-mail every supervisor with an address who supervises the interrupt's team (or
    every team); a mail failure is logged, never raised."""
    team = Interrupt.objects.filter(pk=interrupt_id).values_list("team", flat=True).first()
    names = [Role.SUPERVISOR, *([f"{team}:{Role.SUPERVISOR}"] if team else [])]
    supervisors = (get_user_model().objects.filter(groups__name__in=names, is_active=True)
                   .exclude(email="").distinct().order_by("email"))
    send_with_links(supervisors, interrupt_id, f"[forge] interrupt {interrupt_id} is overdue",
                    f"Interrupt {interrupt_id} is past its deadline ({reason}) and has no "
                    f"default answer. Answer or reassign it.",
                    about=f"supervisors about interrupt {interrupt_id}")
