"""``manage.py expire_interrupts``: answer overdue interrupts with their default, or flag them."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from forgeui import scheduler
from forgeui.apps import OPERATIONS_CHECKS
from forgeui.models import verify_when_due
from forgeui.notifications import fanout
from forgeui.runs import deadlines


class Command(BaseCommand):
    help = ("Handle pending interrupts past their deadline: answer those with a default "
            "(as the system, audited with the reason), mark the others overdue and e-mail "
            "the supervisors. --loop keeps sweeping, hands new events to webhooks and e-mail and "
            "walks the audit chain when due (production's scheduler: run one).")
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loop", action="store_true", help="sweep forever")
        parser.add_argument("--every", type=float, default=None, metavar="SECONDS",
                            help="seconds between sweeps with --loop (FORGE_SWEEP_SECONDS)")

    def handle(self, *args: Any, loop: bool, every: float | None, **options: Any) -> None:
        while True:
            for expiry in deadlines.expire_interrupts():
                self.stdout.write(f"{expiry.outcome} {expiry.interrupt_id}: {expiry.reason}")
            if loop:  # production's only scheduler: notifications go out from here too
                fanout.fan_out()
                verify_when_due()
            if not loop:
                return
            time.sleep(every or scheduler.interval())
