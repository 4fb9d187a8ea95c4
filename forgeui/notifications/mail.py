"""E-mail that never gets in a run's way: a failure is logged, not raised."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Q

from forgeui.models import Interrupt, assignees

logger = logging.getLogger(__name__)


def send_quietly(subject: str, body: str, to: list[str], about: str) -> int:
    """Send one message to ``to``; the number of recipients, 0 when nothing went out."""
    if not to:
        return 0
    try:
        send_mail(subject, body, None, to)
    except Exception:
        logger.exception("could not e-mail %s", about)
        return 0
    return len(to)


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
