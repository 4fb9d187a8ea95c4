"""The Content-Security-Policy header (Django 5.2 has none built in; 6.0 will)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
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
