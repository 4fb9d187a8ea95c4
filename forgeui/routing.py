"""Websocket routes: the live inbox (and run pages, with ``?tree=``)."""

from django.urls import URLPattern, path

from forgeui.inbox.consumers import InboxConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
