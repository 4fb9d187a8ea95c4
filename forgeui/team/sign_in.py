"""How the person behind a request signed in: ``password``, ``sso`` or ``token``.

The method is stored in the session when a person logs in (``user_logged_in``), set on
``request.user`` for each request by ``forgeui.web.middleware.SignInMethodMiddleware``,
and by the API's bearer authentication for a token. The services read it off the user
they are handed and record it beside the person on every decision.

A single sign-on session ends ``FORGE_SSO_SESSION_SECONDS`` after it began, however busy:
roles come from the provider's groups at each sign-in, so this bounds how long a group
removed at the provider still counts here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

from forgeui.models import AuditEntry, SignInMethod

SESSION_KEY = "forge_sign_in"
ATTRIBUTE = "forge_sign_in"
SSO_BACKEND = "forgeui.team.sso.ForgeOIDCBackend"


def method_for_backend(backend: str) -> SignInMethod:
    """Single sign-on through its backend; every other backend checked a password."""
    return SignInMethod.SSO if backend == SSO_BACKEND else SignInMethod.PASSWORD


@receiver(user_logged_in, dispatch_uid="forgeui.sign_in.remember")
def remember(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is not None and hasattr(request, "session"):
        method = method_for_backend(request.session.get(BACKEND_SESSION_KEY, ""))
        request.session[SESSION_KEY] = method.value
        if method == SignInMethod.SSO:
            request.session.set_expiry(sso_session_end())
        mark(user, method)


def sso_session_end() -> datetime:
    """When a single sign-on session begun now ends: a fixed time, not one that moves
    with each request, so the roles are read from the provider again by then."""
    seconds = float(getattr(settings, "FORGE_SSO_SESSION_SECONDS", 3600))
    return timezone.now() + timedelta(seconds=seconds)


@receiver(user_logged_in, dispatch_uid="forgeui.sign_in.audit")
def audit_sign_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    """Every sign-in joins the audit record: who, how, and through which backend."""
    AuditEntry.objects.create(actor=user, sign_in=method_of(user), action="login",
                              object_type="user", object_id=user.get_username(),
                              detail={"backend": getattr(user, "backend", "")})


def from_session(session: Any) -> SignInMethod | None:
    """The method of a signed-in session (sessions older than the key: by their backend)."""
    stored = session.get(SESSION_KEY)
    if stored in SignInMethod.values:
        return SignInMethod(stored)
    backend = session.get(BACKEND_SESSION_KEY)
    return method_for_backend(backend) if backend else None


def mark(user: Any, method: SignInMethod) -> None:
    setattr(user, ATTRIBUTE, method.value)


def method_of(user: Any) -> str:
    """How ``user`` signed in for this request; "" for the system or when nobody said."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    return str(getattr(user, ATTRIBUTE, ""))
