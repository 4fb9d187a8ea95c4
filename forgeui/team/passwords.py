"""What a password change does: its old password is checked through the login throttle,
and the new one revokes the user's API tokens, however it was set (the change form, a
reset link, the admin, ``manage.py changepassword``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from forgeui.models import ApiToken


class TokensRevokedOnChange:
    """A password validator in name only: Django tells each validator of every password
    change (never of a hash upgrade), which is the one place all of them pass."""

    def validate(self, password: str, user: Any = None) -> None:
        return None

    def password_changed(self, password: str, user: Any = None) -> None:
        if user is not None and user.pk is not None:
            ApiToken.objects.filter(user=user).revoke()

    def get_help_text(self) -> str:
        return "Changing your password revokes your API tokens."


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """The old password is checked by ``authenticate``, so each wrong one counts as a
    failed login (django-axes) and a locked-out pair gets the lockout page."""

    def __init__(self, user: Any, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self) -> str:
        old: str = self.cleaned_data["old_password"]
        found = authenticate(self.request, username=self.user.get_username(), password=old)
        if found is None or found.pk != self.user.pk:
            raise ValidationError(self.error_messages["password_incorrect"],
                                  code="password_incorrect")
        return old


class ThrottledPasswordChangeView(auth_views.PasswordChangeView):
    form_class = ThrottledPasswordChangeForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}
