"""Steering notes: guidance for a live run or one of its tasks, which a task hands to
the runtime.
"""

from __future__ import annotations

from django.db import transaction

from forgeui.models import Interrupt, InterruptStatus, Run, SteeringNote
from forgeui.permissions.roles import Action
from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.exceptions import InvalidRequest
from forgeui.runs.services._common import (
    LIVE,
    User,
    audit,
    get_interrupt,
    get_run,
    latest_metadata,
    require_graph,
    require_role,
)
from forgeui.runs.services.checks import require_answerable
from forgeui.runs.tasks import apply_steering_task
from forgeui.team import assignment
from forgeui.team.sign_in import method_of
from runtime.errors import StaleResumeTarget


def add_steering_note(user: User, run_id: str, text: str, task_id: str | None = None,
                      interrupt_id: str | None = None) -> SteeringNote:
    """Record guidance for one run (or one of its tasks); a task hands it to the runtime."""
    run = get_run(user, run_id)
    require_role(user, Action.STEER, run.team, object_type="run", object_id=run_id,
                 run_id=run_id)
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest("a steering note needs some text")
    require_graph(run)
    interrupt = get_interrupt(user, interrupt_id) if interrupt_id else None
    if interrupt is not None and interrupt.run_id != run.run_id:
        raise InvalidRequest(f"interrupt {interrupt_id!r} does not belong to run {run_id!r}")
    _require_steerable(user, run, task_id, interrupt)
    actor = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        reaches = task_id or (interrupt.task_id if interrupt is not None else "")
        note = SteeringNote.objects.create(run=run, interrupt=interrupt, user=actor,
                                           sign_in=method_of(actor), task_id=reaches,
                                           text=text.strip())
        audit(user, "steering.note", object_type="run", object_id=run.run_id, team=run.team,
              run_id=run.run_id, thread_id=run.root_thread_id,
              before_checkpoint_id=run.latest_checkpoint_id,
              detail={"note_id": note.pk, "text": note.text, "task_id": task_id,
                      "interrupt_id": interrupt_id})
        enqueue_on_commit(apply_steering_task, note.pk)
    return note


def _require_steerable(user: User, run: Run, task_id: str | None,
                       interrupt: Interrupt | None) -> None:
    """A note follows the answer's rules: never to an ended run (nobody would read it),
    and not beside an interrupt assigned to or claimed by others."""
    if run.status not in LIVE:  # a failed run may be recovered, and read it then
        raise StaleResumeTarget(f"run {run.run_id!r} has ended ({run.status}); a steering "
                                f"note would never be read", latest_metadata(run))
    targeted = ([interrupt] if interrupt is not None else
                Interrupt.objects.filter(run=run).pending()
                .filter(**({"task_id": task_id} if task_id else {})).select_related("claimed_by"))
    viewer = assignment.Viewer.of(user)
    for pending in targeted:
        if pending.status == InterruptStatus.PENDING:
            require_answerable(user, pending, viewer)
