"""The Content-Security-Policy header (Django 5.2 has none built in; 6.0 will), the
refusal of page input PostgreSQL cannot store, and one thread per request under ASGI.

These are sync middleware: the views are sync, and ``OneThreadPerRequest`` at the bottom of
the list makes Django run the whole chain on the request's one thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import auth
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.decorators import sync_only_middleware
from django.utils.functional import SimpleLazyObject

from forgeui.inbox import bidi
from forgeui.team import sign_in


def ContentSecurityPolicyMiddleware(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Send ``settings.FORGE_CSP`` on every response that does not set its own."""
    policy = settings.FORGE_CSP

    def add(response: HttpResponse) -> HttpResponse:
        if policy:
            response.headers.setdefault("Content-Security-Policy", policy)
        return response

    return after_each(get_response, add)


NUL = "\x00"


def nul_in_request(request: HttpRequest) -> str | None:
    """The name of the first part of the request that holds a NUL character, if any."""
    if NUL in request.path:
        return "the address"
    for where, data in (("the query string", request.GET), ("the form", request.POST)):
        for key, values in data.lists():
            if NUL in key or any(NUL in value for value in values):
                return f"{where} ({key.replace(NUL, '')!r})"
    return None


def after_each(get_response: Callable[[HttpRequest], HttpResponse],
               after: Callable[[HttpResponse], HttpResponse]) -> Any:
    """A middleware applying ``after`` to every response."""
    def middleware(request: HttpRequest) -> HttpResponse:
        return after(get_response(request))
    return middleware


def NulInputMiddleware(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Answer 400 to a page request with a NUL character anywhere in its input.

    PostgreSQL text cannot hold NUL, so such a value reaching a query raised ``DataError``
    (500) on every page that filters or stores it. The API validates its own input (422).
    """

    def refused(request: HttpRequest) -> bool:
        return not request.path.startswith("/api/") and nul_in_request(request) is not None

    def refuse(request: HttpRequest) -> HttpResponse:
        where = nul_in_request(request)
        return render(request, "forgeui/bad_input.html", {"where": where}, status=400)

    def middleware(request: HttpRequest) -> HttpResponse:
        return refuse(request) if refused(request) else get_response(request)
    return middleware


def mark_bidi(response: HttpResponse) -> HttpResponse:
    if response.streaming or not response.get("Content-Type", "").startswith("text/html"):
        return response
    text = response.content.decode(response.charset or "utf-8")
    if bidi.CONTROLS.search(text):
        response.content = bidi.mark(text).encode(response.charset or "utf-8")
    return response


def BidiMarkingMiddleware(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Show bidirectional controls in every HTML page as visible markers (``bidi``)."""
    return after_each(get_response, mark_bidi)


def signed_in_user(request: HttpRequest) -> Any:
    """The session's user, carrying how they signed in (``forgeui.team.sign_in``)."""
    user = auth.get_user(request)
    method = sign_in.from_session(request.session) if user.is_authenticated else None
    if method is not None:
        sign_in.mark(user, method)
    return user


def SignInMethodMiddleware(get_response: Callable[[HttpRequest], Any]) -> Any:
    """After Django's authentication: ``request.user``, still read lazily (no query until
    a view asks), also says whether a password or single sign-on let them in, which the
    services record on each decision."""

    def middleware(request: HttpRequest) -> HttpResponse:
        request.user = SimpleLazyObject(lambda: signed_in_user(request))  # type: ignore[assignment]
        return get_response(request)
    return middleware


@sync_only_middleware
def OneThreadPerRequest(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Last in ``MIDDLEWARE``, and sync only, so that under ASGI every middleware above it
    runs sync, on the request's one thread, as the views do.

    Below an async-capable last middleware, Django runs the chain async, and its own
    middleware then hand each ``process_request`` and ``process_response`` to a thread and
    back; with this, a request goes to a thread only where Django's handler itself does
    (``tests/forgeui/web/test_request_threads.py`` counts them).
    """
    return get_response
