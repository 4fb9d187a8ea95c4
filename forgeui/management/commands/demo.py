"""``manage.py demo``: demo users and one paused run of each demo graph. Safe to repeat.

Under ``DEBUG=0`` it refuses unless ``--force``, and then gives each new account a
generated password (printed once) instead of the published one.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from forgeui.demo.accounts import ACCOUNTS, ADMIN_ACCOUNT
from forgeui.management.commands.create_token import agent_user
from forgeui.models import Run
from forgeui.requests import service as request_service
from forgeui.requests.service import Caller
from forgeui.runs import registry, services
from forgeui.runs.backends import wait_for_tasks

DEMO_INPUTS: dict[str, Any] = {
    "transfer": {"amount": 250, "currency": "EUR", "to": "ACME Ltd"},
    "supervisor": {"topic": "quarterly report"},
    "parallel_approvals": {"item": "conference travel", "amount": 1200},
    "deploy": {"version": "2.4.0"},
    "nested": {"case": "refund dispute #4411"},
    "email": {"to": "dana@example.com", "topic": "the delayed shipment #8812"},
    "refund_agent": {"customer": "sam@example.com", "order": "#5521", "amount": 40},
}


DEMO_AGENT = "release-bot"
DEMO_REQUEST: dict[str, Any] = {
    "title": "Update the changelog and tag v2.4.0?",
    "description": "The release agent wants to **edit the changelog** and push a tag.",
    "agent": {"name": DEMO_AGENT, "session": "release-2.4.0"},
    "idempotency_key": "demo-request",
    "actions": [
        {"name": "write_file", "description": "Add the release's entry",
         "args": {"path": "CHANGELOG.md", "old": "## Unreleased\n",
                  "new": "## Unreleased\n\n## 2.4.0\n- Faster inbox\n"}},
        {"name": "git_tag", "args": {"tag": "v2.4.0"}, "decisions": ["approve", "reject"]},
    ],
}


class Command(BaseCommand):
    help = "Create the demo users (reviewer, supervisor, auditor, admin) and demo runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-runs", action="store_true", help="users only")
        parser.add_argument("--quiet", action="store_true", help="print nothing")
        parser.add_argument("--force", action="store_true",
                            help="run under DEBUG=0 too, with generated passwords")

    def handle(self, *args: Any, no_runs: bool, quiet: bool, force: bool,
               **options: Any) -> None:
        # PRODUCTION is DEBUG=0 as the environment said it (a test runner resets DEBUG).
        if settings.PRODUCTION and not force:
            raise CommandError("demo creates accounts anyone can log in to; it is refused "
                               "under DEBUG=0 (use --force for generated passwords)")
        self.quiet = quiet
        known = not settings.PRODUCTION  # production never gets a published password
        chosen = {name: password if known else secrets.token_urlsafe(16)
                  for name, password in [*ACCOUNTS.items(), ADMIN_ACCOUNT]}
        created = [name for name in ACCOUNTS
                   if ensure_user(name, chosen[name], group=name, staff=name == "auditor")]
        if ensure_user(ADMIN_ACCOUNT[0], chosen[ADMIN_ACCOUNT[0]], superuser=True):
            created.append(ADMIN_ACCOUNT[0])
        if not no_runs:
            self.start_demo_runs()
        for username, password in chosen.items():
            if known:
                self.say(f"  {username:<10} password: {password}")
            elif username in created:  # shown once; never a published password
                self.say(f"  {username:<10} password: {password} (generated)")

    def say(self, line: str) -> None:
        if not self.quiet:
            self.stdout.write(line)

    def start_demo_runs(self) -> None:
        starter = User.objects.get(username="supervisor")  # the role that starts runs
        for graph, demo_input in DEMO_INPUTS.items():
            if graph not in registry.graph_names():
                continue
            if Run.objects.roots().filter(graph=registry.get_executor(graph).name).exists():
                self.say(f"demo run of {graph}: already there")
                continue
            started = services.start_run(starter, graph, demo_input)
            self.say(f"demo run of {graph}: thread {started.thread_id}")
        self.ask_as_demo_agent()
        wait_for_tasks()  # the inbox is populated when this command returns

    def ask_as_demo_agent(self) -> None:
        """One approval request from an agent outside forge (the same one every time)."""
        caller = Caller(agent_user(DEMO_AGENT), DEMO_AGENT)
        made = request_service.create(caller, DEMO_REQUEST)
        self.say(f"demo request from {DEMO_AGENT}: {made.row.id}")


def ensure_user(username: str, password: str, group: str | None = None, staff: bool = False,
                superuser: bool = False) -> bool:
    """Create the user once (True when created); later runs keep its password."""
    user, created = User.objects.get_or_create(
        username=username, defaults={"is_staff": staff or superuser, "is_superuser": superuser}
    )
    if created:
        user.set_password(password)
        user.save()
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return created
