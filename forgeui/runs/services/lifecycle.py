"""A run's life after its start: recovered after a failure, cancelled (at its breakpoints,
with a reason, or outright).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from forgeui.models import BREAKPOINT_KINDS, Answer, Interrupt, RunStatus
from forgeui.permissions.roles import Action
from forgeui.runs import run_status
from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.exceptions import InvalidRequest, StaleAnswer
from forgeui.runs.policies import approvals
from forgeui.runs.services._common import (
    LIVE,
    User,
    audit,
    clipped,
    get_interrupt,
    get_run,
    refused,
    require_graph,
    require_role,
)
from forgeui.runs.services._recording import accept_cancel
from forgeui.runs.services.checks import require_answerable
from forgeui.runs.services.voting import require_may_count
from forgeui.runs.tasks import cancel_run_task, recover_run_task


def recover_run(user: User, run_id: str) -> None:
    """Go on with a failed (or abandoned) root run in a task: the failed step runs again."""
    run = get_run(user, run_id)
    require_role(user, Action.RECOVER, run.team, object_type="run", object_id=run_id,
                 run_id=run_id)
    if run.parent_run_id is not None:
        raise InvalidRequest(f"run {run_id!r} is a sub-agent; recover its root run")
    if run.status not in (RunStatus.FAILED, RunStatus.RUNNING):
        raise InvalidRequest(f"run {run_id!r} is {run.status}; only a failed or running run "
                             f"can be recovered")
    require_graph(run)
    with transaction.atomic():
        audit(user, "run.recover", object_type="run", object_id=run_id, run_id=run_id,
              team=run.team,
              thread_id=run.root_thread_id, before_checkpoint_id=run.latest_checkpoint_id,
              detail={"error": run.error})
        run_status.mark_working([run.run_id], run.root_thread_id)
        enqueue_on_commit(recover_run_task, run.thread_id)


def cancel_run(user: User, run_id: str, reason: str | None = None) -> None:
    """Ask for a run (and everything below it) to be cancelled; a task applies it.

    With a ``reason``, a run paused at breakpoints of its own is cancelled at them: each
    is closed and recorded as "cancelled at breakpoint" with the reason, as a reviewer's
    ``cancel_at_breakpoint`` would record it.
    """
    run = get_run(user, run_id)
    require_role(user, Action.CANCEL, run.team, object_type="run", object_id=run_id,
                 run_id=run_id)
    if run.status not in LIVE:
        raise InvalidRequest(f"run {run_id!r} is {run.status}")
    reason = None if reason is None else cancel_reason(reason)
    require_graph(run)
    at = list(Interrupt.objects.filter(run=run, kind__in=BREAKPOINT_KINDS).pending()
              .select_related("run")) if reason else []
    with transaction.atomic():
        audit(user, "run.cancel", object_type="run", object_id=run_id, run_id=run_id,
              team=run.team,
              thread_id=run.root_thread_id, before_checkpoint_id=run.latest_checkpoint_id,
              detail={"reason": reason} if reason else {})
        for interrupt in at:
            with transaction.atomic():  # one answered meanwhile keeps its answer
                try:
                    accept_cancel(user, interrupt, reason or "")
                except StaleAnswer:
                    continue
        enqueue_on_commit(cancel_run_task, run_id)


MAX_REASON_CHARS = 4000  # as long as a steering note may be


def cancel_reason(text: Any) -> str:
    """The reason a cancel at a breakpoint needs: some words, not a novel."""
    reason = text.strip() if isinstance(text, str) else ""
    if not reason:
        raise InvalidRequest("say why the run is cancelled: a reason is required",
                             loc=["body", "reason"])
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidRequest(f"the reason is longer than {MAX_REASON_CHARS} characters",
                             loc=["body", "reason"])
    return reason


def cancel_at_breakpoint(user: User, interrupt_id: str, reason: str) -> Answer:
    """Decide a breakpoint by cancelling its run, so the guarded node never runs.

    A breakpoint's answer is only recorded (the node runs whatever it says); this is its
    one "no". Recorded like an answer (the same race: ``StaleAnswer`` when someone
    decided first), as "cancelled at breakpoint" with the reason; a task cancels the run
    the breakpoint paused, and everything below it.
    """
    interrupt = get_interrupt(user, interrupt_id)
    require_role(user, Action.ANSWER, interrupt.team, object_type="interrupt",
                 object_id=interrupt_id, run_id=interrupt.run_id,
                 thread_id=interrupt.root_thread_id)
    if not interrupt.is_breakpoint:
        raise InvalidRequest("only a breakpoint (interrupt_before / interrupt_after) is "
                             "cancelled from its answer; this interrupt takes a value")
    reason = cancel_reason(reason)
    require_answerable(user, interrupt)
    require_graph(interrupt.run)
    require_may_count(user, interrupt, approvals.policy_for(interrupt), False)
    try:
        with transaction.atomic():
            return accept_cancel(user, interrupt, reason)
    except StaleAnswer as stale:
        refused(user, interrupt, stale, {"cancel": clipped(reason)})
        raise
