"""Sign-ins in forge's audit log: who, and through which authentication backend."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest

from forgeui.models import AuditEntry


@receiver(user_logged_in)
def audit_sign_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    AuditEntry.objects.create(actor=user, action="login", object_type="user",
                              object_id=user.get_username(),
                              detail={"backend": getattr(user, "backend", "")})
