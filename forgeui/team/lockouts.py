"""Login lockouts (django-axes) in forge's audit log: when one starts and who lifted it."""

from __future__ import annotations

import logging
from typing import Any

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.contrib import admin
from django.db.models import QuerySet
from django.dispatch import receiver
from django.http import HttpRequest

from forgeui.models import AuditEntry

logger = logging.getLogger(__name__)
NAME_LIMIT = 150  # a username as long as Django allows; anything longer was not one


@receiver(user_locked_out)
def audit_lockout(sender: Any, request: HttpRequest, username: str | None,
                  ip_address: str | None, **kwargs: Any) -> None:
    name = (username or "")[:NAME_LIMIT]
    logger.warning("login locked out: username %r from %s", name, ip_address)
    AuditEntry.objects.create(action="login.locked_out", object_type="login",
                              object_id=name, detail={"ip_address": ip_address,
                                                      "path": request.path[:200]})


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
