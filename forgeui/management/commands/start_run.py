"""``manage.py start_run GRAPH --input JSON``: start a run from a script."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from forgeui.apps import OPERATIONS_CHECKS
from forgeui.runs import services
from forgeui.runs.backends import wait_for_tasks
from forgeui.runs.exceptions import ForgeUIError


class Command(BaseCommand):
    help = "Start a run of a registered graph; prints its run id, thread id and status as JSON."
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("graph")
        parser.add_argument("--input", default="null", help="the run's input, as JSON")
        parser.add_argument("--thread-id", default=None, help="default: a new thread")

    def handle(self, *args: Any, graph: str, input: str, thread_id: str | None,
               **options: Any) -> None:
        try:
            value = json.loads(input)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--input is not JSON: {exc}") from exc
        try:
            started = services.start_run(None, graph, value, thread_id)
        except ForgeUIError as exc:
            raise CommandError(str(exc)) from exc
        wait_for_tasks()  # in-process tasks finish first; with RQ a worker runs it later
        started = started.refresh()
        self.stdout.write(json.dumps({"run_id": started.run_id, "thread_id": started.thread_id,
                                      "status": started.status}))
