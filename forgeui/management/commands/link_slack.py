"""``manage.py link_slack USERNAME SLACK_USER_ID``: the Slack user answers as USERNAME.

``--team T`` records the Slack workspace; ``--remove`` unlinks USERNAME instead.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from forgeui.apps import OPERATIONS_CHECKS
from forgeui.slack import linking
from forgeui.slack.models import LinkedVia


class Command(BaseCommand):
    help = "Let Slack user SLACK_USER_ID answer forge's Slack messages as USERNAME."
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("slack_user_id", nargs="?", default="")
        parser.add_argument("--team", default="", help="the Slack workspace (team) id")
        parser.add_argument("--remove", action="store_true", help="unlink USERNAME")

    def handle(self, *args: Any, username: str, slack_user_id: str, team: str, remove: bool,
               **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        if remove:
            done = linking.unlink(user, by=None)
            self.stdout.write(f"unlinked {username}" if done else f"{username} was not linked")
            return
        try:
            linking.link(user, slack_user_id, team, LinkedVia.COMMAND, by=None)
        except linking.LinkRefused as refused:
            raise CommandError(str(refused)) from None
        self.stdout.write(f"Slack user {slack_user_id.strip()} now answers as {username}")
