"""ASGI entry point: HTTP through Django, websockets through Channels (served by daphne)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
django_http = get_asgi_application()  # set up Django before importing anything with models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from forgeui import scheduler  # noqa: E402
from forgeui.api.longpoll import LongPolls  # noqa: E402
from forgeui.inbox.origins import SameOriginValidator  # noqa: E402
from forgeui.requests.mcp_mount import Mount  # noqa: E402
from forgeui.routing import websocket_urlpatterns  # noqa: E402

channels_app = ProtocolTypeRouter(
    {
        # daphne serves no static files itself; the embedded default needs them.
        "http": ASGIStaticFilesHandler(django_http) if settings.DEBUG else django_http,
        # Origin host in ALLOWED_HOSTS, and scheme, host and port the socket's own (origins.py);
        # then a session user (the consumer refuses anonymous sockets).
        "websocket": AllowedHostsOriginValidator(
            SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)
# Beside Django, at the outermost layer: /mcp (streamable HTTP, forgeui.requests.mcp_mount)
# and the approval requests' long polls (forgeui.api.longpoll), which hold no thread.
application = Mount(LongPolls(channels_app))

if settings.TASKS["default"]["BACKEND"] == "forgeui.runs.backends.ThreadPoolBackend":
    scheduler.start_embedded()  # the embedded default's deadline sweep (forgeui.scheduler)
