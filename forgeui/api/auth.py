"""Who is calling the API.

Two ways in: ``Authorization: Bearer <token>`` (an ``ApiToken``; cookies are ignored, so
no CSRF applies) and the browser's Django session (CSRF enforced on unsafe methods). A
request carrying an ``Authorization`` header is judged by that header alone: a bad token is
401 even when a session cookie rides along.

Authentication also applies the read gate: a user with no forge role (``forgeui.permissions.roles``)
is refused with 403 and logged, and audited once an hour rather than once a request. What
each role may change is decided in ``forgeui.runs.services``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from ninja.errors import AuthorizationError, HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from forgeui.models import ApiToken, AuditEntry, SignInMethod
from forgeui.permissions.roles import Action, Role, allowed, needed_roles, roles_of
from forgeui.team import sign_in

logger = logging.getLogger(__name__)
DENIED_WINDOW = timedelta(hours=1)

# The role table lives in forgeui.permissions.roles; these names are re-exported for older imports.
__all__ = ["Action", "BearerAuth", "CsrfFailed", "Role", "SessionAuth", "allowed", "api_auth",
           "login_required_for_docs", "roles_of"]


def may_read(request: HttpRequest, user: Any) -> Any:
    """The user, if any forge role lets them in; else audit the refusal and 403."""
    if allowed(user, Action.READ):
        return user
    audit_denied(request, user, {"reason": "no forge role"})
    raise AuthorizationError(message=f"no forge role; one of: {needed_roles(Action.READ)}")


def audit_denied(request: HttpRequest, user: Any, detail: dict[str, Any]) -> None:
    """Audit a caller with no forge role once per ``DENIED_WINDOW``, and log every refusal:
    someone the site gave no role must not be able to fill its audit log."""
    logger.warning("api denied %s %s to %s: %s", request.method, request.path[:255],
                   user.get_username(), detail["reason"])
    recent = AuditEntry.objects.filter(action="api.denied", actor=user,
                                       created_at__gte=timezone.now() - DENIED_WINDOW)
    if not recent.exists():
        AuditEntry.objects.create(actor=user, action="api.denied", object_type="route",
                                  object_id=request.path[:255],
                                  detail={"method": request.method, **detail})


class BearerAuth(HttpBearer):
    """``Authorization: Bearer <token>`` against the hashed ``ApiToken`` table."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = ApiToken.objects.authenticate(token.strip()) if token.strip() else None
        if found is None:
            return None
        request.user = found.user  # code that reads request.user sees the token's owner
        sign_in.mark(found.user, SignInMethod.TOKEN)
        if found.agent:
            refuse_agent(request, found)
        return may_read(request, found.user)


def refuse_agent(request: HttpRequest, token: ApiToken) -> None:
    """An agent token asks for approvals (``/api/requests``) and does nothing else."""
    audit_denied(request, token.user, {"agent": token.agent, "reason": "agent token"})
    raise AuthorizationError(message="an agent token may only create and read its own "
                                     "approval requests (/api/requests)")


class CsrfFailed(HttpError):
    """A session request without its CSRF token: most likely another site's forged
    request riding on the user's cookie, so it is not recorded in the user's name."""


class SessionAuth(APIKeyCookie):
    """The browser's Django session; unsafe methods must carry the CSRF token.

    Only a logged-in session is CSRF-checked, so an anonymous POST is 401, not 403.
    """

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        if "authorization" in request.headers or not request.user.is_authenticated:
            return None  # a token request never falls back to cookies
        if not getattr(request, "_ninja_csrf_exempt", False) and check_csrf(request):
            raise CsrfFailed(403, "CSRF check failed: send the csrftoken cookie's value "
                                  "in the X-CSRFToken header")
        return request.COOKIES.get(self.param_name, "")

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        if key is None:
            return None
        return may_read(request, request.user)


api_auth = [BearerAuth(), SessionAuth()]


def login_required_for_docs(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The schema and docs are for users with a forge role (session or token), like every
    route.

    A browser without a session is sent to the login page; anything else gets a JSON 401,
    and a signed-in user with no role a 403 (audited, as on the API's routes).
    """
    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = _caller(request)
        if user is None:
            if "authorization" not in request.headers and "text/html" in request.headers.get(
                    "Accept", ""):
                return redirect_to_login(request.get_full_path())
            return JsonResponse({"detail": "Unauthorized"}, status=401)
        try:
            may_read(request, user)
        except AuthorizationError as exc:
            return JsonResponse({"detail": exc.message}, status=exc.status_code)
        return view(request, *args, **kwargs)
    return checked


def _caller(request: HttpRequest) -> Any:
    """The signed-in user (by token when a header is sent, else by session), or None."""
    if "authorization" not in request.headers:
        return request.user if request.user.is_authenticated else None
    scheme, _, token = request.headers["authorization"].partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    found = ApiToken.objects.authenticate(token.strip())
    return found.user if found is not None else None
