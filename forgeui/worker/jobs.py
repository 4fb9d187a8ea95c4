"""The one procrastinate task: run the django-tasks task a job names, in flight
(``forgeui.runs.inflight``) on the worker's loop."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from django.utils.module_loading import import_string
from procrastinate.contrib.django import app

from forgeui.runs.inflight import run_in_flight

logger = logging.getLogger(__name__)
JOB = "forge.task"


@app.task(name=JOB)
async def run_task(path: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Run the task at ``path``; a worker stopping before it ends says which it left."""
    try:
        await run_in_flight(import_string(path), args, kwargs)
    except asyncio.CancelledError:
        logger.warning("stopped before it ended, left to recovery: %s%r", path, tuple(args))
        raise
