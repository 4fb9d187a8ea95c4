"""Starting a registered graph: checked and recorded here, run by a task.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from forgeui.models import Run
from forgeui.permissions import teams
from forgeui.permissions.roles import Action
from forgeui.runs import registry
from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.exceptions import InvalidRequest, ThreadTaken
from forgeui.runs.services._common import (
    LIVE,
    User,
    audit,
    check_input,
    require_json,
    require_role,
)
from forgeui.runs.tasks import start_run_task
from forgeui.store import DjangoCheckpointStore


@dataclass(frozen=True, slots=True)
class StartedRun:
    """A run start, recorded. ``run_id`` is None until the task has started the run."""

    thread_id: str
    run_id: str | None
    status: str
    request_id: str

    def refresh(self) -> StartedRun:
        """Look again: has the task started the run by now?"""
        return _started(self.thread_id, self.request_id)


def start_run(user: User, graph: str, input: Any, thread_id: str | None = None) -> StartedRun:
    """Record the start and enqueue it; the task creates the run's first checkpoint."""
    team = teams.team_of_graph(str(graph))
    require_role(user, Action.START_RUN, team, object_type="graph", object_id=str(graph)[:255])
    if graph in registry.BUILTIN_GRAPHS:  # its input carries the deadline rules it obeys
        raise InvalidRequest(f"{graph!r} runs are made with POST /api/requests, not started")
    executor = registry.get_executor(graph)  # unknown or broken: refused before any write
    require_json(input, "input")
    check_input(executor.input_schema, input)
    if thread_id:  # the caller's thread may have runs; a thread named here is new
        require_free(thread_id, executor.name)
    thread_id = thread_id or uuid.uuid4().hex
    # The run id is handed out now, so a caller can follow a run that is still queued.
    request_id = run_id = uuid.uuid4().hex
    with transaction.atomic():  # the audit entry last: it holds the chain's lock
        enqueue_on_commit(start_run_task, graph, thread_id, request_id)
        audit(user, "run.start", object_type="thread", object_id=thread_id,
              thread_id=thread_id, run_id=run_id, team=team,
              detail={"graph": graph, "input": input, "request_id": request_id})
    return _started(thread_id, run_id)


def require_free(thread_id: str, graph: str) -> None:
    """Refuse a thread with a live run, or one another graph ran."""
    latest = DjangoCheckpointStore().load_head_sync(thread_id)
    if latest is not None and latest.status in LIVE:
        raise InvalidRequest(f"thread {thread_id!r} already has a {latest.status} run")
    if latest is not None:  # a finished thread goes on only with the graph it ran
        owner = Run.objects.filter(pk=latest.run_id).values_list("graph", flat=True).first()
        if owner is not None and owner != graph:
            raise ThreadTaken(thread_id, owner, latest.status)


def _started(thread_id: str, run_id: str) -> StartedRun:
    """With an immediate task backend the run exists by now; otherwise it is queued."""
    latest = DjangoCheckpointStore().load_head_sync(thread_id)
    if latest is None or latest.run_id != run_id:
        return StartedRun(thread_id, run_id, "queued", run_id)
    return StartedRun(thread_id, latest.run_id, latest.status, run_id)
