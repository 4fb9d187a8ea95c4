"""``/mcp`` at the outer ASGI layer: the MCP server (``forgeui.requests.mcp_server``) over
streamable HTTP, beside Django and Channels.

The SDK is imported and the server built on the first authenticated ``/mcp`` call, in a
thread: a web process that no MCP client calls never loads it, and every web process
starts that much sooner.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async

from forgeui.requests.service import NotAllowed, NotAnAgent, agent_for_token

ASGI = Callable[[dict[str, Any], Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]],
                Awaitable[None]]


def streamable_http(path: str) -> tuple[Any, Any]:
    """The MCP server and its streamable HTTP app at ``path``, in the SDK's stateless mode."""
    from mcp.server.transport_security import TransportSecuritySettings

    from forgeui.requests.mcp_server import build

    server = build()
    # A bearer token is required on every call, which a rebinding page cannot send;
    # the Host header is checked by the deployment's proxy and by Django elsewhere.
    app = server.streamable_http_app(
        streamable_http_path=path, stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return server, app


class Mount:
    """``/mcp`` to the MCP server, everything else to ``inner`` (Django/Channels).

    The SDK's session manager needs a running task group; daphne runs no ASGI lifespan,
    so it is started on the first ``/mcp`` call and lives as long as the process.
    """

    def __init__(self, inner: ASGI, path: str = "/mcp") -> None:
        self.inner = inner
        self.path = path
        self._started: asyncio.Future[Any] | None = None
        self._server: asyncio.Task[None] | None = None  # held, so it is never collected

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Awaitable[Any]],
                       send: Callable[..., Awaitable[Any]]) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.inner(scope, receive, send)
            return
        refused = await self._refusal(scope)
        if refused is not None:
            status, detail = refused
            await send({"type": "http.response.start", "status": status, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body",
                        "body": json.dumps({"detail": detail}).encode()})
            return
        app = await self._running_app()
        await app(scope, receive, send)

    async def _refusal(self, scope: dict[str, Any]) -> tuple[int, str] | None:
        """Why this call may not use ``/mcp`` (401: no valid token; 403: not an agent's),
        or None."""
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401, "send an agent token: Authorization: Bearer <token>"
        try:
            await sync_to_async(agent_for_token)(token.strip())
        except NotAllowed as exc:
            return (403 if isinstance(exc, NotAnAgent) else 401), str(exc)
        return None

    async def _running_app(self) -> Any:
        if self._started is None:
            loop = asyncio.get_running_loop()
            self._started = loop.create_future()
            self._server = loop.create_task(self._serve(self._started),
                                            context=contextvars.Context())
        # Shielded: a call that gives up while the server starts must not cancel the start.
        return await asyncio.shield(self._started)

    async def _serve(self, started: asyncio.Future[Any]) -> None:
        try:
            server, app = await asyncio.to_thread(streamable_http, self.path)
        except Exception as exc:
            self._started = None  # the next call tries again
            started.set_exception(exc)
            return
        async with server.session_manager.run():
            started.set_result(app)
            await asyncio.Event().wait()  # until the process ends
