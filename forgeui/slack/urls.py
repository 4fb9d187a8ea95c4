"""Slack's routes: interactivity (``/slack/events``) and linking an account."""

from django.urls import URLPattern, path

from forgeui.slack import interactions, pages

urlpatterns: list[URLPattern] = [
    path("events", interactions.events, name="slack-events"),
    path("link/", pages.profile, name="slack-profile"),
    path("link/<str:signed>/", pages.follow, name="slack-link"),
]
