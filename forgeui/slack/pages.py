"""The forge side of linking: the signed link a Slack user is sent, and the profile."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from forgeui.slack import linking
from forgeui.slack.models import LinkedVia, SlackLink


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    """Which Slack account acts as this user; POST unlinks it."""
    if request.method == "POST":
        linking.unlink(request.user, by=request.user)
    link = SlackLink.objects.filter(user=request.user).first()
    return render(request, "forgeui/slack_link.html", {"link": link})


@login_required
def follow(request: HttpRequest, signed: str) -> HttpResponse:
    """GET asks to confirm; POST links the signed-in user to the link's Slack user."""
    try:
        slack_user, team = linking.read_token(signed)
        if request.method == "POST":
            linking.link(request.user, slack_user, team, LinkedVia.PROFILE, by=request.user)
    except linking.LinkRefused as refused:
        return render(request, "forgeui/slack_link.html", {"error": str(refused)}, status=400)
    link = SlackLink.objects.filter(user=request.user).first()
    return render(request, "forgeui/slack_link.html",
                  {"link": link, "offer": slack_user if request.method != "POST" else ""})
