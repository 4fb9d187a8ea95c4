"""``manage.py create_token USERNAME``: print a new API token (the only time it is shown).

The token expires after ``FORGE_TOKEN_DAYS`` (90 unless set), or ``--days N``.
``--agent NAME`` prints an agent token instead: it may ask for approvals
(``/api/requests``, ``/mcp``) and read its own requests, and nothing else. Its user,
``agent:NAME``, is made when missing, with no password and no forge role.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from forgeui.apps import OPERATIONS_CHECKS
from forgeui.models import ApiToken

AGENT_USER_PREFIX = "agent:"
MAX_DAYS = 3650


class Command(BaseCommand):
    help = ("Create an API token for USERNAME (or an agent token with --agent NAME) and "
            "print it. Only its hash is stored: copy it now. Send it as "
            "'Authorization: Bearer <token>'.")
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?")
        parser.add_argument("--name", default="", help="a label, e.g. the script using it")
        parser.add_argument("--agent", default="", help="an agent token for agent NAME")
        parser.add_argument("--days", type=int, default=None,
                            help="days until the token expires (default: FORGE_TOKEN_DAYS, "
                                 f"at most {MAX_DAYS})")

    def handle(self, *args: Any, username: str | None, name: str, agent: str,
               days: int | None, **options: Any) -> None:
        if days is not None and not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--days is from 1 to {MAX_DAYS}")
        if agent:
            found = agent_user(agent.strip())
        elif username:
            found = existing_user(username)
        else:
            raise CommandError("name a USERNAME, or an agent with --agent NAME")
        _token, secret = ApiToken.objects.issue(found, name=name or "create_token",
                                                agent=agent.strip(), days=days)
        self.stdout.write(secret)


def existing_user(username: str) -> Any:
    found = get_user_model().objects.filter(
        **{get_user_model().USERNAME_FIELD: username}).first()
    if found is None:
        raise CommandError(f"no user {username!r}")
    if not found.is_active:
        raise CommandError(f"user {username!r} is inactive; its tokens would not work")
    return found


def agent_user(agent: str) -> Any:
    if not agent or len(agent) > 100:
        raise CommandError("an agent's name has 1 to 100 characters")
    model = get_user_model()
    user, made = model.objects.get_or_create(
        **{model.USERNAME_FIELD: f"{AGENT_USER_PREFIX}{agent}"[:150]})
    if made:
        user.set_unusable_password()
        user.save()
    if not user.is_active:
        raise CommandError(f"agent {agent!r} is deactivated; its tokens would not work")
    return user
