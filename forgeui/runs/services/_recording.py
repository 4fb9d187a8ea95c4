"""The decision itself: the compare-and-set that moves an interrupt out of pending, the
``Answer`` row with its notes and audit, and the task enqueued to apply it. The last step
of every answer (and of a cancel at a breakpoint) before the tasks; private to the
package: every caller goes through the checks in ``answering`` or ``lifecycle``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.utils import timezone

from forgeui.models import (
    Answer,
    AnswerKind,
    Approval,
    ChildPolicy,
    EventKind,
    Interrupt,
    InterruptStatus,
    SteeringNote,
)
from forgeui.models.events import EventDraft, publish_on_commit
from forgeui.runs import run_status
from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.services._common import User, audit, stale_answer
from forgeui.runs.tasks import apply_answer_task
from forgeui.team.sign_in import method_of


def close(user: User, interrupt: Interrupt, status: str,
          expected_checkpoint_id: str | None = None) -> Any:
    """Move the interrupt row from pending to ``status`` for ``user``, or raise
    ``StaleAnswer``: the compare-and-set that makes one decision win. The actor."""
    claimed = Interrupt.objects.filter(pk=interrupt.pk).pending()
    if expected_checkpoint_id:
        claimed = claimed.filter(checkpoint_id=expected_checkpoint_id)
    actor = user if user is not None and user.is_authenticated else None
    if actor is not None and not actor.is_superuser:  # a claim taken meanwhile wins
        claimed = claimed.filter(Q(claimed_by__isnull=True) | Q(claimed_by=actor))
    if claimed.update(status=status, answered_at=timezone.now(), answered_by=actor) != 1:
        raise stale_answer(interrupt.pk, expected_checkpoint_id)
    return actor


@dataclass(frozen=True, slots=True)
class Given:
    """One answer as sent: its value, its sender's own note, the checkpoint the sender
    saw (None: whichever is latest), and what becomes of the run's children."""

    value: Any
    steering: str | None = None
    expected_checkpoint_id: str | None = None
    child_policy: str = ChildPolicy.LEAVE


def accept(user: User, interrupt: Interrupt, given: Given, meta: dict[str, Any] | None = None,
           counted: Sequence[Approval] = ()) -> Answer:
    """Record the answer that decides ``interrupt``; ``counted`` are the votes a policy
    counted toward it, each with its own note."""
    actor = close(user, interrupt, InterruptStatus.ANSWERED, given.expected_checkpoint_id)
    answer = Answer.objects.create(
        interrupt=interrupt, user=actor, sign_in=method_of(actor), value=given.value,
        steering=(given.steering or "").strip(), child_policy=given.child_policy,
        expected_checkpoint_id=given.expected_checkpoint_id or "", meta=meta or {},
    )
    _keep_notes(interrupt, answer, counted)
    answered = EventDraft(EventKind.INTERRUPT_ANSWERED, interrupt.run_id,
                          interrupt.root_thread_id, interrupt.pk,
                          {"answered_by": getattr(actor, "username", None)})
    run_status.answer_accepted(interrupt.run_id, interrupt.root_thread_id, [answered])
    enqueue_on_commit(apply_answer_task, answer.pk)
    # Last: the audit entry holds the chain's lock until this transaction commits.
    audit(user, "answer", object_type="interrupt", object_id=interrupt.pk, team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id,
          detail={"answer_id": answer.pk, "value": given.value, "steering": answer.steering,
                  "child_policy": given.child_policy, **({"policy": meta} if meta else {})})
    return answer


def _keep_notes(interrupt: Interrupt, answer: Answer, counted: Sequence[Approval]) -> None:
    """The notes that reach the run with ``answer``, each credited to whoever wrote it:
    every counted vote's under a policy, else the answer's own."""
    given = ([(a.user_id, a.steering, a.created_at) for a in counted] if counted
             else [(answer.user_id, answer.steering, answer.created_at)])
    SteeringNote.objects.bulk_create([
        SteeringNote(run=interrupt.run, interrupt=interrupt, answer=answer,
                     task_id=interrupt.task_id, user_id=by, text=text, created_at=at,
                     sign_in=answer.sign_in if by == answer.user_id else "")
        for by, text, at in given if text])


def accept_cancel(user: User, interrupt: Interrupt, reason: str) -> Answer:
    actor = close(user, interrupt, InterruptStatus.CANCELLED)
    answer = Answer.objects.create(interrupt=interrupt, user=actor, sign_in=method_of(actor),
                                   kind=AnswerKind.CANCEL, value=None, reason=reason)
    publish_on_commit([EventDraft(EventKind.INTERRUPT_CANCELLED, interrupt.run_id,
                                  interrupt.root_thread_id, interrupt.pk,
                                  {"cancelled_by": getattr(actor, "username", None)})])
    enqueue_on_commit(apply_answer_task, answer.pk)
    audit(user, "breakpoint.cancel", object_type="interrupt", object_id=interrupt.pk,
          team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id,
          detail={"answer_id": answer.pk, "decision": AnswerKind(AnswerKind.CANCEL).label,
                  "reason": reason, "node": interrupt.node, "kind": interrupt.kind})
    return answer
