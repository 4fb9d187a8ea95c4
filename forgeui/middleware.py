"""The Content-Security-Policy header (Django 5.2 has none built in; 6.0 will), and the
refusal of page input PostgreSQL cannot store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.decorators import sync_and_async_middleware


@sync_and_async_middleware
def ContentSecurityPolicyMiddleware(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Send ``settings.FORGE_CSP`` on every response that does not set its own.

    Sync and async, so an ASGI request does not hop to a thread just for a header.
    """
    policy = settings.FORGE_CSP

    def add(response: HttpResponse) -> HttpResponse:
        if policy:
            response.headers.setdefault("Content-Security-Policy", policy)
        return response

    if iscoroutinefunction(get_response):
        async_get: Callable[[HttpRequest], Awaitable[HttpResponse]] = get_response

        async def middleware(request: HttpRequest) -> HttpResponse:
            return add(await async_get(request))
    else:
        def middleware(request: HttpRequest) -> HttpResponse:  # type: ignore[misc]
            return add(get_response(request))
    return middleware


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


def NulInputMiddleware(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Answer 400 to a page request with a NUL character anywhere in its input.

    PostgreSQL text cannot hold NUL, so such a value reaching a query raised ``DataError``
    (500) on every page that filters or stores it. The API validates its own input (422).
    """

    def middleware(request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/") and (where := nul_in_request(request)):
            return render(request, "forgeui/bad_input.html", {"where": where}, status=400)
        response: HttpResponse = get_response(request)
        return response
    return middleware
