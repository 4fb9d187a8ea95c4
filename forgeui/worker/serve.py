"""The worker's event loop: procrastinate's worker, many jobs in flight at once.

Coroutine tasks share this loop; sync work (saves, sync nodes, sync-only executors, sync
tasks: ``forgeui.runs.inflight``) goes to the loop's default executor, a pool of
``threads``. On SIGTERM procrastinate stops fetching and gives jobs in flight ``grace``
seconds to end; the rest are cancelled (``jobs.run_task`` logs each) and their runs,
saved as they were, are left to ``recover_runs``. The worker's heartbeat row says it is
alive; one silent for long (``stalled``) marks its jobs as stalled, which
``recover_runs`` retries.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from types import FrameType

import psycopg
from django.conf import settings
from procrastinate.contrib.django import app
from procrastinate.contrib.django import settings as procrastinate_settings
from procrastinate.contrib.django.django_connector import DjangoConnector
from procrastinate.contrib.django.utils import connector_params
from psycopg_pool import AsyncConnectionPool

from forgeui.worker.stalled import stalled_after

logger = logging.getLogger(__name__)
QUEUES = ["default", "notify"]
# A new job wakes the worker at once (LISTEN/NOTIFY); a job queued behind a capped
# graph's lane is only found by polling when the lane frees.
POLL_EVERY = 1.0


def exit_at_once(signum: int, frame: FrameType | None) -> None:
    logger.info("forge_worker %s: stopped before taking jobs", worker_name())
    sys.exit(0)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def in_autocommit(connection: psycopg.AsyncConnection[object]) -> None:
    await connection.set_autocommit(True)


def job_pool() -> AsyncConnectionPool:
    """The pool procrastinate takes and finishes jobs with: its own (connections checked
    as they are handed out), but in autocommit. Each of its queries is one statement, so
    a BEGIN and a COMMIT around it were two more round trips per query, four per job."""
    alias = procrastinate_settings.settings.DATABASE_ALIAS
    return AsyncConnectionPool(kwargs=connector_params(alias), configure=in_autocommit,
                               check=AsyncConnectionPool.check_connection, open=False)


async def serve(concurrency: int, threads: int, grace: float) -> None:
    """Take jobs until a signal stops the worker."""
    # procrastinate puts its own handlers in place only once it fetches jobs, after its
    # worker row is written; a SIGTERM before then finds nothing in flight: exit cleanly.
    signal.signal(signal.SIGTERM, exit_at_once)
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(threads, thread_name_prefix="forge-sync"))
    connector = app.connector
    assert isinstance(connector, DjangoConnector), "procrastinate's Django app is not set up"
    worker_app = app.with_connector(connector.get_worker_connector())
    logger.info("forge_worker %s: %d runs in flight at most", worker_name(), concurrency)
    pool = job_pool()
    await pool.open(wait=True)  # a database out of reach stops the worker here, as before
    async with pool, worker_app.open_async(pool):
        # No task middleware: procrastinate's Django one closes connections around each
        # job on the one thread-sensitive thread, a queue every job would wait in; jobs
        # here do their ORM work on pool threads, whose connections ``inflight`` closes
        # when they fail.
        await worker_app.run_worker_async(
            queues=QUEUES, name=worker_name(), concurrency=concurrency, task_middleware=[],
            shutdown_graceful_timeout=grace, fetch_job_polling_interval=POLL_EVERY,
            update_heartbeat_interval=settings.FORGE_WORKER_HEARTBEAT_SECONDS,
            stalled_worker_timeout=stalled_after(), install_signal_handlers=True)
    logger.info("forge_worker %s stopped", worker_name())
