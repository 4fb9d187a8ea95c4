"""E-mail that never gets in a run's way: a failure is logged, not raised."""

from __future__ import annotations

import logging

from django.core.mail import send_mail

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
