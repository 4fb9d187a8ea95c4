"""The one procrastinate task: run the django-tasks task a job names.

Graph tasks are coroutines and are awaited on the worker's loop, their ORM work on the
thread the store shares; sync tasks (webhooks, e-mail) run on the loop's default
executor, the worker's bounded pool, each on a connection of its own thread.
"""

from __future__ import annotations

import asyncio
import logging
from inspect import iscoroutinefunction
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.utils.module_loading import import_string
from django_tasks.base import Task
from procrastinate.contrib.django import app

logger = logging.getLogger(__name__)
JOB = "forge.task"


@app.task(name=JOB)
async def run_task(path: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Run the task at ``path``; a worker stopping before it ends says which it left."""
    task: Task[Any, Any] = import_string(path)
    try:
        if iscoroutinefunction(task.func):
            await task.func(*args, **kwargs)
        else:
            await sync_to_async(on_fresh_connection, thread_sensitive=False)(
                task.func, args, kwargs)
    except asyncio.CancelledError:
        logger.warning("stopped before it ended, left to recovery: %s%r", path, tuple(args))
        raise


def on_fresh_connection(func: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
    # Pool threads outlive jobs: never reuse a connection that went bad in between.
    close_old_connections()
    try:
        func(*args, **kwargs)
    finally:
        close_old_connections()
