"""``manage.py demo``: demo users and one paused run of each demo graph. Safe to repeat."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandParser

from forgeui import registry, services
from forgeui.backends import wait_for_tasks
from forgeui.models import Run

# Documented in README.md and printed by `make run`: local demo accounts only.
ACCOUNTS = {
    "reviewer": "forge-reviewer",
    "supervisor": "forge-supervisor",
    "auditor": "forge-auditor",
}
ADMIN_ACCOUNT = ("admin", "forge-admin")

DEMO_INPUTS: dict[str, Any] = {
    "transfer": {"amount": 250, "currency": "EUR", "to": "ACME Ltd"},
    "supervisor": {"topic": "quarterly report"},
    "parallel_approvals": {"item": "conference travel", "amount": 1200},
    "deploy": {"version": "2.4.0"},
    "nested": {"case": "refund dispute #4411"},
}


class Command(BaseCommand):
    help = "Create the demo users (reviewer, supervisor, auditor, admin) and demo runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-runs", action="store_true", help="users only")
        parser.add_argument("--quiet", action="store_true", help="print nothing")

    def handle(self, *args: Any, no_runs: bool, quiet: bool, **options: Any) -> None:
        self.quiet = quiet
        for username, password in ACCOUNTS.items():
            ensure_user(username, password, group=username, staff=username == "auditor")
        ensure_user(*ADMIN_ACCOUNT, superuser=True)
        if not no_runs:
            self.start_demo_runs()
        for username, password in [*ACCOUNTS.items(), ADMIN_ACCOUNT]:
            self.say(f"  {username:<10} password: {password}")

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
        wait_for_tasks()  # the inbox is populated when this command returns


def ensure_user(username: str, password: str, group: str | None = None, staff: bool = False,
                superuser: bool = False) -> User:
    """Create the user once; later runs keep whatever password it has now."""
    user, created = User.objects.get_or_create(
        username=username, defaults={"is_staff": staff or superuser, "is_superuser": superuser}
    )
    if created:
        user.set_password(password)
        user.save()
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user
