"""E-mail that never gets in a run's way: a failure is logged, not raised.

With teams, an interrupt's assignees are told only if they may read it in its team, and
what the message quotes of its payload is masked where marked sensitive.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Q

from forgeui.models import Interrupt, assignees
from forgeui.notifications.audience import told_of
from forgeui.team import decision_links
from forgeui.team.sensitive import masked_payload

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
    """Tell an interrupt's named users (and its groups' members) by e-mail; how many.

    Each gets a message of their own: its link opens the decision for them alone."""
    interrupt = Interrupt.objects.filter(pk=interrupt_id).first()
    if interrupt is None or not interrupt.assignees or interrupt.status != "pending":
        return 0
    users, groups = assignees.decode(interrupt.assignees)
    named = get_user_model().objects.filter(
        Q(username__in=users) | Q(groups__name__in=groups), is_active=True)
    recipients = (named.filter(pk__in=get_user_model().objects.filter(
        told_of(interrupt.team)).values("pk")).exclude(email="").distinct().order_by("email"))
    payload = masked_payload(interrupt)
    question = payload.get("question") if isinstance(payload, dict) else None
    subject = f"[forge] waiting for you: {question or interrupt.node}"
    where = f"Interrupt {interrupt.pk} at {'/'.join(interrupt.namespace)} ({interrupt.node})"
    return send_with_links(recipients, interrupt.pk, subject, f"{where} is assigned to you.",
                           about=f"the assignees of {interrupt_id}")


def send_with_links(recipients: Iterable[Any], interrupt_id: str, subject: str, text: str,
                    about: str) -> int:
    """One message per recipient, each with the decision link bound to them; how many."""
    sent = 0
    for user in recipients:
        link = decision_links.url_for(user, interrupt_id)
        sent += send_quietly(subject, f"{text} Open it (this link is for you alone):\n\n"
                                      f"{link}\n", [user.email], about=about)
    return sent
