"""Login lockouts (django-axes) in forge's audit log: when one starts and who lifted it;
and what a successful login forgets."""

from __future__ import annotations

import logging
from typing import Any

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.db.models import QuerySet
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

from forgeui.models import AuditEntry
from forgeui.team.addresses import canonical, client_address

logger = logging.getLogger(__name__)
NAME_LIMIT = 150  # a username as long as Django allows; anything longer was not one


@receiver(user_locked_out)
def audit_lockout(sender: Any, request: HttpRequest, username: str | None,
                  ip_address: str | None, **kwargs: Any) -> None:
    """One audit row when a lockout starts, not one per attempt during it.

    Anyone may try to log in, so the row holds nothing a stranger chose: the username only
    when it names an account, the address only as an address.
    """
    name = known_username(username)
    address = canonical(ip_address or "")
    logger.warning("login locked out: username %r from %s", (username or "")[:NAME_LIMIT],
                   address)
    if not lockout_recorded(name, address):
        AuditEntry.objects.create(action="login.locked_out", object_type="login",
                                  object_id=name, detail={"ip_address": address,
                                                          "known_user": bool(name)})


def lockout_recorded(name: str, address: str) -> bool:
    """Is this lockout's start in the audit log already (since any lift of it)?"""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    entries = AuditEntry.objects.filter(object_id=name, detail__ip_address=address)
    lifted = entries.filter(action="login.unlocked").order_by("-created_at").first()
    if lifted is not None:
        since = max(since, lifted.created_at)
    return entries.filter(action="login.locked_out", created_at__gte=since).exists()


def known_username(username: str | None) -> str:
    """``username`` if an account has it, else "" (a guess is not worth keeping)."""
    model = get_user_model()
    name = (username or "")[:NAME_LIMIT]
    return name if name and model.objects.filter(**{model.USERNAME_FIELD: name}).exists() else ""


@receiver(user_logged_in)
def forget_own_failures(sender: Any, request: HttpRequest | None, user: Any,
                        **kwargs: Any) -> None:
    """A success forgets that username's failures from that address, and nothing more:
    logging in to one's own account must not wipe the address's guesses at others."""
    if request is not None:
        AccessAttempt.objects.filter(username=user.get_username(),
                                     ip_address=client_address(request)).delete()


def audit_lifted(request: HttpRequest, attempts: QuerySet[AccessAttempt] | list[Any]) -> None:
    for attempt in attempts:
        AuditEntry.objects.create(
            actor=request.user, action="login.unlocked", object_type="login",
            object_id=(attempt.username or "")[:NAME_LIMIT],
            detail={"ip_address": attempt.ip_address,
                    "failures": attempt.failures_since_start})


class AuditedAccessAttemptAdmin(AccessAttemptAdmin):
    """Deleting an access attempt lifts its lockout; the audit log says who did."""

    def delete_model(self, request: HttpRequest, obj: AccessAttempt) -> None:
        audit_lifted(request, [obj])
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AccessAttempt]) -> None:
        audit_lifted(request, list(queryset))
        super().delete_queryset(request, queryset)


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, AuditedAccessAttemptAdmin)
