"""Websocket routes (the inbox consumer is filled in by the inbox issue)."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
