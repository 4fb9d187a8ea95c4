"""``GET /api/requests/{id}?wait=N`` with a bearer token, served beside Django.

Django runs every ASGI request in a thread-sensitive context of its own, and the first
synchronous step inside it (a sync middleware, the API's token check) starts a thread
that stays until the response: a held long poll would keep one thread per waiter. Long
polls are therefore answered here, at the outer ASGI layer: the token check and the two
reads run on the event loop's small shared pool, and the wait itself is an event
(``forgeui.requests.waiting``). The answer is the API route's own shape; anything else
(no token, ``wait=0``, a malformed ``wait``) goes to Django's route as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from channels.db import DatabaseSyncToAsync
from ninja.responses import NinjaJSONEncoder

from forgeui.api.requests import MAX_WAIT_S, RequestOut, wait_for
from forgeui.requests import service
from forgeui.requests.service import Caller, NotAllowed, caller_for_token
from forgeui.runs.exceptions import NotFound

ASGI = Callable[[dict[str, Any], Callable[..., Awaitable[Any]], Callable[..., Awaitable[Any]]],
                Awaitable[None]]
PATH = re.compile(r"^/api/requests/([A-Za-z0-9_-]{1,255})/?$")
WAIT = re.compile(r"[0-9]{1,3}")


def off_loop(func: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """``func`` on the loop's shared pool, with Django's connection hygiene."""
    return DatabaseSyncToAsync(func, thread_sensitive=False)


class LongPolls:
    def __init__(self, inner: ASGI) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Awaitable[Any]],
                       send: Callable[..., Awaitable[Any]]) -> None:
        target = self._target(scope)
        if target is None:
            await self.inner(scope, receive, send)
            return
        request_id, wait, token = target
        status, body = await self._answer(request_id, wait, token)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def _target(scope: dict[str, Any]) -> tuple[str, int, str] | None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            return None
        found = PATH.match(scope.get("path", ""))
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        waits = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("wait", [])
        if found is None or scheme.lower() != "bearer" or len(waits) != 1:
            return None
        # ASCII digits only: str.isdigit() takes "²", which int() refuses.
        if not WAIT.fullmatch(waits[0]) or not 0 < int(waits[0]) <= MAX_WAIT_S:
            return None
        return found.group(1), int(waits[0]), token.strip()

    async def _answer(self, request_id: str, wait: int, token: str) -> tuple[int, bytes]:
        try:
            caller: Caller = await off_loop(caller_for_token)(token)
            row = await off_loop(service.find)(caller, request_id)
        except NotAllowed as exc:
            return 401, _json({"detail": str(exc)})
        except NotFound as exc:
            return 404, _json({"detail": str(exc)})
        found = await wait_for(caller, row, wait, off_loop)
        return 200, _json(RequestOut.model_validate(found).model_dump())


def _json(data: dict[str, Any]) -> bytes:
    return json.dumps(data, cls=NinjaJSONEncoder).encode()
