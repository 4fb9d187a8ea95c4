"""Websocket handshakes only from this site's own pages (cross-site websocket hijacking).

Browsers send cookies with a websocket handshake from any page, so the session cookie
alone proves nothing; the ``Origin`` header says which page opened the socket. Channels'
``AllowedHostsOriginValidator`` compares only the origin's host with ``ALLOWED_HOSTS``:
``http://localhost:9999`` or ``https://localhost`` would pass for a site on
``http://localhost:8000``. ``SameOriginValidator`` also requires the scheme and port to
be the socket's own (from its ``Host`` header and ``ws``/``wss``), refuses a missing,
repeated or ``null`` origin, and lets through extra exact origins listed in the setting
``FORGE_WS_ORIGINS`` (for a TLS proxy in front of daphne, say).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize(origin: str) -> str | None:
    """``scheme://host[:port]`` in lower case without a default port; None if not one."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username or parts.password:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is None or port == DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


def same_origin(scope: dict[str, Any]) -> bool:
    origins = [v for k, v in scope.get("headers", []) if k.lower() == b"origin"]
    hosts = [v for k, v in scope.get("headers", []) if k.lower() == b"host"]
    if len(origins) != 1 or len(hosts) != 1:
        return False
    origin = normalize(origins[0].decode("latin1"))
    if origin is None:
        return False
    extra = {normalize(o) for o in getattr(settings, "FORGE_WS_ORIGINS", [])}
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    return origin in extra or origin == normalize(f"{scheme}://{hosts[0].decode('latin1')}")


class SameOriginValidator:
    """ASGI middleware: deny a websocket whose ``Origin`` is not the socket's own site."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not same_origin(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
