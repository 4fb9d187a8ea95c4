"""A graph's cap on its runs in flight, across every worker (``FORGE_GRAPH_CAPS``).

A capped graph's jobs carry a procrastinate lock naming one of ``cap`` lanes, chosen by
the run's root thread; procrastinate runs one job per lock at a time and keeps the rest
queued in order, so at most ``cap`` jobs of the graph run at once and none is dropped.
A run stays in its lane, so its answers queue behind its own start.
"""

from __future__ import annotations

import zlib
from typing import Any

from django.conf import settings

from forgeui.models import Answer, Run

# The tasks that drive a graph, and how to find (graph, root thread) from their arguments.
DRIVING = {"start_run_task", "apply_answer_task", "recover_run_task"}


def lock_for(task_name: str, args: list[Any]) -> str | None:
    """The lock of a driving task's job when its graph is capped, else None."""
    caps: dict[str, int] = settings.FORGE_GRAPH_CAPS
    if not caps or task_name not in DRIVING:
        return None
    found = graph_and_thread(task_name, args)
    if found is None or found[0] not in caps:
        return None
    graph, thread = found
    return f"forge-cap:{graph}:{zlib.crc32(thread.encode()) % max(1, caps[graph])}"


def graph_and_thread(task_name: str, args: list[Any]) -> tuple[str, str] | None:
    if task_name == "start_run_task":
        return str(args[0]), str(args[1])
    if task_name == "apply_answer_task":
        row = (Answer.objects.filter(pk=args[0])
               .values_list("interrupt__run__graph", "interrupt__root_thread_id").first())
    else:
        row = Run.objects.filter(thread_id=args[0]).values_list("graph", "root_thread_id").first()
    return (row[0], row[1]) if row else None
