"""``manage.py create_token USERNAME``: print a new API token (the only time it is shown)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from forgeui.models import ApiToken


class Command(BaseCommand):
    help = ("Create an API token for USERNAME and print it. Only its hash is stored: "
            "copy it now. Send it as 'Authorization: Bearer <token>'.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label, e.g. the script using it")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username})
        found = user.first()
        if found is None:
            raise CommandError(f"no user {username!r}")
        if not found.is_active:
            raise CommandError(f"user {username!r} is inactive; its tokens would not work")
        _token, secret = ApiToken.objects.issue(found, name=name or "create_token")
        self.stdout.write(secret)
