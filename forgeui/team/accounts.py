"""``/accounts/``: login and password change for everyone (both throttled by
django-axes), password reset only where e-mail is configured (``FORGE_PASSWORD_RESET``),
throttled per address.

A reset mails a link to whoever owns the address, so without real e-mail it only lets
strangers probe the form; with it, each address gets ``RESET_LIMIT`` requests an hour.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path
from django.utils import timezone

from forgeui.models import AuditEntry
from forgeui.team.addresses import client_address
from forgeui.team.passwords import ThrottledPasswordChangeView

RESET_LIMIT = 5  # reset requests per client address per RESET_WINDOW
RESET_WINDOW = timedelta(hours=1)


class ThrottledPasswordResetView(auth_views.PasswordResetView):
    """Django's reset form; each POST is audited, and an address over the limit waits."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        address = client_address(request)
        recent = AuditEntry.objects.filter(action="password_reset.requested",
                                           object_id=address,
                                           created_at__gte=timezone.now() - RESET_WINDOW)
        if recent.count() >= RESET_LIMIT:
            return render(request, "registration/locked_out.html",
                          {"cooloff_timedelta": "an hour"}, status=429)
        AuditEntry.objects.create(action="password_reset.requested", object_type="address",
                                  object_id=address[:255])
        return super().post(request, *args, **kwargs)


class LoginView(auth_views.LoginView):
    """Django's login, offering single sign-on beside the password where it is set up."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "sso": settings.FORGE_SSO,
                "sso_failed": settings.FORGE_SSO and self.request.GET.get("sso") == "failed"}


def urlpatterns() -> list[URLPattern]:
    found = [
        path("login/", LoginView.as_view(), name="login"),
        path("password_change/", ThrottledPasswordChangeView.as_view(),
             name="password_change"),
        path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(),
             name="password_change_done"),
    ]
    if settings.FORGE_PASSWORD_RESET:
        found += [
            path("password_reset/", ThrottledPasswordResetView.as_view(),
                 name="password_reset"),
            path("password_reset/done/", auth_views.PasswordResetDoneView.as_view(),
                 name="password_reset_done"),
            path("reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
                 name="password_reset_confirm"),
            path("reset/done/", auth_views.PasswordResetCompleteView.as_view(),
                 name="password_reset_complete"),
        ]
    return found
