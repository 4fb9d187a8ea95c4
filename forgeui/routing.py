"""Websocket routes: the live inbox (and run, timeline and interrupt pages, with
``?tree=`` or ``?interrupt=``)."""

from django.urls import URLPattern, path

from forgeui.inbox.consumers import InboxConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
