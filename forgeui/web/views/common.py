"""What every page shares: the role check, htmx fragments, redirects and refusals."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from forgeui.permissions.roles import Action, allowed, roles_of, team_roles
from forgeui.runs.exceptions import (
    Forbidden,
    ForgeUIError,
    GraphUnavailable,
    NotFound,
    StaleAnswer,
    ThreadTaken,
)
from runtime.errors import ForgeError

View = Callable[..., HttpResponse]
REFUSAL_STATUS = [(NotFound, 404), (Forbidden, 403), (StaleAnswer, 409), (ThreadTaken, 409),
                  (GraphUnavailable, 409), (ForgeUIError, 422),
                  (ForgeError, 409)]


# The template flag ``can_<name>`` of each action a page may offer.
BUTTONS = [("answer", Action.ANSWER), ("steer", Action.STEER), ("assign", Action.ASSIGN),
           ("fork", Action.FORK), ("cancel", Action.CANCEL), ("recover", Action.RECOVER),
           ("start", Action.START_RUN)]


def is_htmx(request: HttpRequest) -> bool:
    """A fragment request (history restores want the whole page)."""
    return (request.headers.get("HX-Request") == "true"
            and request.headers.get("HX-History-Restore-Request") != "true")


def go_to(request: HttpRequest, target: str) -> HttpResponse:
    """Send the browser to ``target``: htmx follows ``HX-Redirect``, a form a redirect."""
    if is_htmx(request):
        return HttpResponse(status=204, headers={"HX-Redirect": target})
    return redirect(target)


def requires(action: Action) -> Callable[[View], View]:
    """Log in first; then 403 unless the user's role allows ``action``."""
    def decorate(view: View) -> View:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not allowed(request.user, action):
                refused = Forbidden(f"your role does not allow {action}")
                if is_htmx(request):  # a notice above the page, not a page in a row
                    return refusal(request, refused)
                raise PermissionDenied(str(refused))
            return view(request, *args, **kwargs)
        return login_required(checked)
    return decorate


def page(request: HttpRequest, template: str, partial: str, context: dict[str, Any],
         status: int = 200, team: str | None = None) -> HttpResponse:
    """The whole page, or only ``partial`` of it for htmx; ``team``: the team of the one
    object the page is about, whose buttons it shows (None: a list of many teams')."""
    name = f"{template}#{partial}" if is_htmx(request) else template
    return render(request, name, {**context, **permissions(request, team)}, status=status)


def permissions(request: HttpRequest, team: str | None = None) -> dict[str, Any]:
    """What the page's buttons may offer: in ``team`` (an object's), or anywhere."""
    user = request.user
    return {**{f"can_{name}": allowed(user, action, team) for name, action in BUTTONS},
            "roles": role_names(user)}


def role_names(user: Any) -> list[str]:
    """The roles shown beside the user's name: plain ones, then ``team:role`` ones."""
    held = [*sorted(roles_of(user)), *sorted(
        f"{team}:{role}" for team, roles in team_roles(user).items() for role in roles)]
    return held or (["admin"] if user.is_superuser else [])


def refusal(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A service's refusal as a message with its HTTP status: the one mapping for pages."""
    status = next(code for kind, code in REFUSAL_STATUS if isinstance(exc, kind))
    response = render(request, "forgeui/base.html#refusal", {"message": str(exc)}, status=status)
    if is_htmx(request):  # shown above the page, whatever the form meant to swap
        response.headers["HX-Retarget"] = "#notices"
        response.headers["HX-Reswap"] = "innerHTML"
    return response
