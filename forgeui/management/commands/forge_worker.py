"""``manage.py forge_worker``: a worker process holding many runs at once."""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from forgeui.apps import OPERATIONS_CHECKS


class Command(BaseCommand):
    help = ("Run queued graph work: up to --concurrency runs in flight, async nodes on one "
            "event loop, sync nodes on --threads threads. SIGTERM stops taking jobs and "
            "gives runs in flight --grace seconds to reach their next save.")
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, default=100,
                            help="runs in flight at most (default 100)")
        parser.add_argument("--threads", type=int, default=16,
                            help="threads for sync nodes and sync tasks (default 16)")
        parser.add_argument("--grace", type=float, default=20.0, metavar="SECONDS",
                            help="on SIGTERM, how long runs in flight may go on (default 20)")

    def handle(self, *args: Any, concurrency: int, threads: int, grace: float,
               **options: Any) -> None:
        if settings.FORGE_QUEUE != "procrastinate":
            raise CommandError("forge_worker takes jobs from PostgreSQL: set DATABASE_URL to "
                               "a PostgreSQL database and REDIS_URL (FORGE_QUEUE=procrastinate)")
        if concurrency < 1 or threads < 1:
            raise CommandError("--concurrency and --threads must be 1 or more")
        pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
        # Each thread keeps a pooled connection; the loop's own thread takes one more.
        if isinstance(pool, dict) and threads + 1 > pool["max_size"]:
            raise CommandError(f"--threads {threads} needs {threads + 1} database connections; "
                               f"FORGE_DB_POOL allows {pool['max_size']}: raise it or lower "
                               "--threads")
        from forgeui.worker.serve import serve

        asyncio.run(serve(concurrency, threads, grace))
