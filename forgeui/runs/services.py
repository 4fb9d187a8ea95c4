"""What people do to runs, in one place the API and the pages both call.

Each service checks the role, records the intent and its audit row in one transaction,
and leaves graph execution to a task enqueued on commit. Nothing here runs node code.

Roles (``forgeui.team.roles``): ``reviewer`` answers, adds notes and forks; ``supervisor`` also
starts, cancels, recovers and resumes targeted sub-agents; ``auditor`` only reads. Superusers and
``user=None`` (management commands) may do all. A refusal leaves an audit row, nothing else.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks.base import Task

from forgeui.models import (
    BREAKPOINT_KINDS,
    Answer,
    AnswerKind,
    Approval,
    AuditEntry,
    ChildPolicy,
    EventKind,
    Interrupt,
    InterruptStatus,
    Run,
    RunStatus,
    SteeringNote,
    Vote,
    assignees,
)
from forgeui.models.events import EventDraft, publish_on_commit
from forgeui.runs import answer_rules, registry, run_status, storable
from forgeui.runs.exceptions import (
    AlreadyClaimed,
    AlreadyCounted,
    Forbidden,
    InvalidRequest,
    NotFound,
    StaleAnswer,
    ThreadTaken,
)
from forgeui.runs.policies import approvals, votes
from forgeui.runs.policies.config import Policy
from forgeui.runs.tasks import (
    apply_answer_task,
    apply_steering_task,
    cancel_run_task,
    recover_run_task,
    start_run_task,
)
from forgeui.store import DjangoCheckpointStore
from forgeui.team import assignment
from forgeui.team.roles import Action, allowed, needed_roles
from forgeui.team.sign_in import method_of
from runtime.checkpoint import Head
from runtime.errors import AmbiguousResume, StaleResumeTarget

logger = logging.getLogger(__name__)
User = AbstractBaseUser | AnonymousUser | None
ForgeUIErrorType = AlreadyClaimed | StaleAnswer
LIVE = (RunStatus.RUNNING, RunStatus.INTERRUPTED, RunStatus.FAILED)


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


def require_role(user: User, action: Action, **target: Any) -> None:
    """Raise ``Forbidden`` unless ``user`` may do ``action``; the refusal is audited."""
    if allowed(user, action):
        return
    audit(user, f"{action}.denied", **target,
          detail={"reason": f"needs one of the roles: {needed_roles(action)}"})
    raise Forbidden(f"{action} needs one of the roles: {needed_roles(action)}")


def audit(user: User, action: str, **fields: Any) -> AuditEntry:
    actor = user if user is not None and user.is_authenticated else None
    return AuditEntry.objects.create(actor=actor, sign_in=method_of(actor), action=action,
                                     **fields)


def enqueue_on_commit(task: Task[Any, Any], *args: Any) -> None:
    """Enqueue ``task`` once the transaction commits, logging (not raising) a failure: its
    work is recorded by then (a start or cancel as its audit row, an answer or note as its
    row, a recovery as its run marked running), and ``recover_runs`` enqueues what a
    failure left behind."""
    def enqueue() -> None:  # a function, not a partial: Django logs a failure by its name
        task.enqueue(*args)

    transaction.on_commit(enqueue, robust=True)


def start_run(user: User, graph: str, input: Any, thread_id: str | None = None) -> StartedRun:
    """Record the start and enqueue it; the task creates the run's first checkpoint."""
    require_role(user, Action.START_RUN, object_type="graph", object_id=str(graph)[:255])
    if graph in registry.BUILTIN_GRAPHS:  # its input carries the deadline rules it obeys
        raise InvalidRequest(f"{graph!r} runs are made with POST /api/requests, not started")
    executor = registry.get_executor(graph)  # unknown or broken: refused before any write
    require_json(input, "input")
    check_input(executor.input_schema, input)
    thread_id = thread_id or uuid.uuid4().hex
    latest = DjangoCheckpointStore().load_head_sync(thread_id)
    if latest is not None and latest.status in LIVE:
        raise InvalidRequest(f"thread {thread_id!r} already has a {latest.status} run")
    if latest is not None:  # a finished thread goes on only with the graph it ran
        owner = Run.objects.filter(pk=latest.run_id).values_list("graph", flat=True).first()
        if owner is not None and owner != executor.name:
            raise ThreadTaken(thread_id, owner, latest.status)
    # The run id is handed out now, so a caller can follow a run that is still queued.
    request_id = run_id = uuid.uuid4().hex
    with transaction.atomic():
        audit(user, "run.start", object_type="thread", object_id=thread_id,
              thread_id=thread_id, run_id=run_id,
              detail={"graph": graph, "input": input, "request_id": request_id})
        enqueue_on_commit(start_run_task, graph, thread_id, input, getattr(user, "pk", None),
                          request_id)
    return _started(thread_id, run_id)


def check_input(schema: dict[str, Any] | None, input: Any,
                loc: list[str | int] | None = None) -> None:
    """Refuse an input the graph's ``input_schema`` rejects, naming the field.

    A left-out input (None) is the graph's to default, as its nodes decide.
    """
    if not schema or input is None:
        return
    _match_schema(schema, input, loc or ["body", "input"], "input",
                  "the graph's input_schema")


def _match_schema(schema: dict[str, Any], value: Any, loc: list[str | int], what: str,
                  whose: str) -> None:
    try:
        error = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(value))
    except jsonschema.SchemaError as exc:  # the graph's bug, not the caller's
        raise InvalidRequest(f"{whose} is not a valid JSON Schema: {exc.message}",
                             loc=loc) from None
    if error is not None:
        raise InvalidRequest(f"{what} does not match {whose} at {error.json_path}: "
                             f"{error.message}", loc=[*loc, *error.absolute_path])


def _started(thread_id: str, run_id: str) -> StartedRun:
    """With an immediate task backend the run exists by now; otherwise it is queued."""
    latest = DjangoCheckpointStore().load_head_sync(thread_id)
    if latest is None or latest.run_id != run_id:
        return StartedRun(thread_id, run_id, "queued", run_id)
    return StartedRun(thread_id, latest.run_id, latest.status, run_id)


def answer_interrupt(user: User, interrupt_id: str, value: Any, steering: str | None = None,
                     expected_checkpoint_id: str | None = None,
                     child_policy: str = ChildPolicy.LEAVE) -> Answer | Approval:
    """Accept one answer in one transaction, then apply it in a task.

    Under an approval policy the answer is one person's approval (or rejection): it is
    counted, and an ``Approval`` returned, until the policy is met; the answer that meets
    it is recorded and applied like any. Raises ``StaleAnswer`` (with who answered when,
    and where the run stands) when the interrupt is no longer pending or
    ``expected_checkpoint_id`` is not its run's latest, ``AlreadyCounted`` when this
    person's approval is already in; then only an ``answer.refused`` audit row is written.
    """
    require_role(user, Action.ANSWER, object_type="interrupt", object_id=interrupt_id)
    interrupt = _interrupt(interrupt_id)
    require_may_answer(user, interrupt, value, child_policy)
    policy = approvals.policy_for(interrupt)
    vote = _require_may_count(user, interrupt, policy, value)
    try:
        with transaction.atomic():
            return _decide(user, interrupt, value, steering, expected_checkpoint_id,
                           child_policy, policy, vote)
    except StaleAnswer as stale:
        _refused(user, interrupt, stale, value)
        raise


def _decide(user: User, interrupt: Interrupt, value: Any, steering: str | None,
            expected_checkpoint_id: str | None, child_policy: str, policy: Policy | None,
            vote: Vote | None) -> Answer | Approval:
    if policy is None:
        return _accept(user, interrupt, value, steering, expected_checkpoint_id, child_policy)
    if vote is None:  # the system, rejecting (a deadline's default): that ends it
        return _accept(user, interrupt, value, steering, expected_checkpoint_id, child_policy,
                       meta={"policy": policy.name, "decided_by": "system",
                             "decision": "rejected", "approvals": [], "rejections": []})
    if policy.approvals == policy.rejections == 1:  # one vote decides: the answer records it
        answer = _accept(user, interrupt, value, steering, expected_checkpoint_id,
                         child_policy, meta=approvals.single_vote(policy, user, vote))
        answer.progress = approvals.single_vote_text(policy, user, vote)  # type: ignore[attr-defined]
        return answer
    return _count_vote(user, interrupt, value, steering, expected_checkpoint_id, child_policy,
                       policy, vote)


def _require_may_count(user: User, interrupt: Interrupt, policy: Policy | None,
                       value: Any) -> Vote | None:
    """Under a policy: what the answer counts as, once its sender may count (else
    ``Forbidden``, audited; an answer that neither approves nor rejects is
    ``InvalidRequest``: who may answer is checked before what they answered)."""
    if policy is None:
        return None
    vote = votes.vote_of(policy, interrupt, value)
    actor = user if user is not None and user.is_authenticated else None
    if actor is None:
        if vote == Vote.REJECT:
            return None
        raise _policy_refusal(user, interrupt, f"policy {policy.name!r}: only people approve; "
                                               f"the system may only reject")
    _require_eligible(user, interrupt, policy)
    if vote is None:
        raise InvalidRequest(f"policy {policy.name!r}: answer approve or reject (an edit or "
                             f"a response would need approvals of its own); "
                             f"{votes.words(policy)}", loc=["body", "value"])
    return vote


def _require_eligible(user: User, interrupt: Interrupt, policy: Policy | None) -> None:
    """``Forbidden`` (audited) when a person's answer could not count under ``policy``."""
    actor = user if user is not None and user.is_authenticated else None
    if policy is not None and actor is not None and (
            reason := approvals.why_not_counted(policy, actor, interrupt)) is not None:
        raise _policy_refusal(user, interrupt, reason)


def _policy_refusal(user: User, interrupt: Interrupt, reason: str) -> Forbidden:
    audit(user, "answer.denied", object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          detail={"reason": reason})
    return Forbidden(reason)


def _count_vote(user: User, interrupt: Interrupt, value: Any, steering: str | None,
                expected_checkpoint_id: str | None, child_policy: str, policy: Policy,
                vote: Vote) -> Answer | Approval:
    """Count one person's vote with the interrupt's row locked, so two at once both count
    (from two people) and only the one that meets the policy records the answer."""
    locked = Interrupt.objects.select_for_update().filter(pk=interrupt.pk).pending()
    if expected_checkpoint_id:
        locked = locked.filter(checkpoint_id=expected_checkpoint_id)
    if not locked.exists():
        raise stale_answer(interrupt.pk, expected_checkpoint_id)
    approval, tally = approvals.record(user, interrupt, policy, vote, value,
                                       (steering or "").strip())
    if approval is None:
        raise _already_counted(user, interrupt, tally)
    audit(user, f"approval.{vote}", object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id,
          detail={"approval_id": approval.pk, "policy": policy.name, "value": value,
                  "steering": approval.steering, "progress": tally.text()})
    approval.progress = tally.text()  # type: ignore[attr-defined]  # what the 202 says
    if not tally.decided:
        publish_on_commit([EventDraft(EventKind.INTERRUPT_UPDATED, interrupt.run_id,
                                      interrupt.root_thread_id, interrupt.pk,
                                      {"action": f"approval.{vote}"})])
        return approval
    answer = _accept(user, interrupt, value, approval.steering, None, child_policy,
                     meta=tally.meta(), counted=[*tally.approvals, *tally.rejections])
    answer.progress = approval.progress  # type: ignore[attr-defined]
    return answer


def _already_counted(user: User, interrupt: Interrupt,
                     tally: approvals.Tally) -> AlreadyCounted:
    mine = next(a for a in (*tally.approvals, *tally.rejections)
                if a.user_id == getattr(user, "pk", None))
    row = Interrupt.objects.select_related("run").get(pk=interrupt.pk)
    return AlreadyCounted(interrupt.pk, mine.user.get_username(), mine.created_at.isoformat(),
                          latest_metadata(row.run), mine.vote, tally.text())


def resume_map(user: User, thread_id: str,
               answers: dict[str, Any]) -> list[Answer | Approval]:
    """Answer several interrupts of one tree at once: all are accepted, or none is."""
    require_role(user, Action.ANSWER, object_type="thread", object_id=thread_id,
                 thread_id=thread_id)
    if not answers:
        raise InvalidRequest("answers is empty")
    interrupts = [_interrupt(interrupt_id) for interrupt_id in answers]
    for interrupt in interrupts:
        if thread_id not in (interrupt.root_thread_id, interrupt.thread_id):
            raise NotFound(f"interrupt {interrupt.pk!r} is not part of thread {thread_id!r}")
        if interrupt.sub_agent_id:  # answering a sub-agent by its place in the tree is a
            # targeted resume, whichever route carries it: the same role as /api/resume
            require_role(user, Action.RESUME_TARGETED, object_type="interrupt",
                         object_id=interrupt.pk, run_id=interrupt.run_id,
                         thread_id=interrupt.root_thread_id)
        require_may_answer(user, interrupt, answers[interrupt.pk],
                           loc=["body", "answers", interrupt.pk])
    policies = [approvals.policy_for(interrupt) for interrupt in interrupts]
    votes = [_require_may_count(user, interrupt, policy, answers[interrupt.pk])
             for interrupt, policy in zip(interrupts, policies, strict=True)]
    current = interrupts[0]
    try:
        with transaction.atomic():
            accepted = []
            for current, policy, vote in zip(interrupts, policies, votes, strict=True):
                accepted.append(_decide(user, current, answers[current.pk], None, None,
                                        ChildPolicy.LEAVE, policy, vote))
            return accepted
    except StaleAnswer as stale:
        _refused(user, current, stale, answers[current.pk])
        raise


def resume_targeted(user: User, run_id: str, value: Any, task_id: str | None = None,
                    interrupt_id: str | None = None, namespace: list[str] | None = None,
                    steering: str | None = None) -> Answer | Approval:
    """Answer the one pending interrupt a target names, leaving siblings alone.

    Nothing pending there raises ``StaleResumeTarget`` (``StaleAnswer`` when the named
    interrupt was answered); several pending raises ``AmbiguousResume``.
    """
    require_role(user, Action.RESUME_TARGETED, object_type="run", object_id=run_id,
                 run_id=run_id)
    run = _run(run_id)
    found = Interrupt.objects.filter(run=run).pending().by_age()
    if namespace is not None and list(namespace) != run.namespace:
        # A LangGraph run keeps its subgraphs' interrupts, each under its namespace.
        found = found.filter(namespace=list(namespace))
        if not found.exists():
            raise StaleResumeTarget(f"run {run_id!r} has namespace {run.namespace}, not "
                                    f"{list(namespace)}", latest_metadata(run))
    if task_id is not None:
        found = found.filter(task_id=task_id)
    if interrupt_id is not None:
        found = found.filter(pk=interrupt_id)
    chosen = list(found[:2])
    if not chosen and interrupt_id and Interrupt.objects.filter(pk=interrupt_id, run=run).exists():
        raise stale_answer(interrupt_id, None)
    if not chosen:
        raise StaleResumeTarget(f"nothing pending in run {run_id!r} matches the target",
                                latest_metadata(run))
    if len(chosen) > 1:
        raise AmbiguousResume(f"several interrupts of run {run_id!r} are pending; name a "
                              f"task_id or interrupt_id", list(found))
    return answer_interrupt(user, chosen[0].pk, value, steering=steering)


def require_may_answer(user: User, interrupt: Interrupt, value: Any,
                       child_policy: str = ChildPolicy.LEAVE,
                       loc: list[str | int] | None = None) -> None:
    """Every rule an answer to ``interrupt`` obeys, however it comes: directly, in a
    resume map or in bulk, or pre-filled in a fork of its thread (checked on this, the
    source's interrupt). The role, assignment and claims, a graph that loads here, the
    value's fit; raises (audited where refused) before anything is written."""
    require_role(user, Action.ANSWER, object_type="interrupt", object_id=interrupt.pk,
                 run_id=interrupt.run_id, thread_id=interrupt.root_thread_id)
    require_answerable(user, interrupt)
    require_graph(interrupt.run)
    _require_eligible(user, interrupt, approvals.policy_for(interrupt))
    _check_answer(interrupt, value, child_policy, loc=loc or ["body", "value"])


def require_answerable(user: User, interrupt: Interrupt,
                       viewer: assignment.Viewer | None = None) -> None:
    """Raise ``Forbidden`` (audited) when the interrupt is assigned to or claimed by others."""
    viewer = viewer or assignment.Viewer.of(user)
    if assignment.may_answer(viewer, interrupt):
        return
    reason = assignment.refusal(viewer, interrupt)
    audit(user, "answer.denied", object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          detail={"reason": reason})
    raise Forbidden(f"you may not answer this interrupt: {reason}")


# -- assignment and claims ----------------------------------------------------------------


def claim_interrupt(user: User, interrupt_id: str) -> Interrupt:
    """Take a pending interrupt: until released, only ``user`` may answer it.

    Raises ``Forbidden`` when ``user`` may not answer it and ``AlreadyClaimed`` (409) when
    someone else claimed it first; claiming one's own claim again changes nothing.
    """
    require_role(user, Action.ANSWER, object_type="interrupt", object_id=interrupt_id)
    interrupt = _interrupt(interrupt_id)
    if interrupt.claimed_by_id is not None:
        if interrupt.claimed_by_id == getattr(user, "pk", None):
            return interrupt
        raise _claim_lost(interrupt.pk)
    require_answerable(user, interrupt)
    with transaction.atomic():
        taken = Interrupt.objects.filter(pk=interrupt.pk, claimed_by__isnull=True).pending()
        if taken.update(claimed_by=user, claimed_at=timezone.now()) != 1:
            raise _claim_lost(interrupt.pk)
        changed(user, "interrupt.claim", interrupt, {})
    return _interrupt(interrupt.pk)


def release_interrupt(user: User, interrupt_id: str) -> Interrupt:
    """Give a claim back; supervisors may release anyone's."""
    require_role(user, Action.ANSWER, object_type="interrupt", object_id=interrupt_id)
    interrupt = _interrupt(interrupt_id)
    if interrupt.claimed_by_id is None:
        return interrupt
    mine = interrupt.claimed_by_id == getattr(user, "pk", None)
    if not mine:
        require_role(user, Action.ASSIGN, object_type="interrupt", object_id=interrupt_id)
    with transaction.atomic():
        Interrupt.objects.filter(pk=interrupt.pk).update(claimed_by=None, claimed_at=None)
        changed(user, "interrupt.release", interrupt,
                 {"claimed_by": interrupt.claimed_by.get_username()})
    return _interrupt(interrupt.pk)


def assign_interrupt(user: User, interrupt_id: str, users: list[str],
                     groups: list[str]) -> Interrupt:
    """Name who may answer (supervisor); empty lists open it to every reviewer.

    A claim by someone the new assignees leave out ends.
    """
    require_role(user, Action.ASSIGN, object_type="interrupt", object_id=interrupt_id)
    interrupt = _interrupt(interrupt_id)
    if interrupt.status != InterruptStatus.PENDING:
        raise stale_answer(interrupt.pk, None)
    _require_known(users, groups)
    stored = assignees.encode(users, groups)
    update: dict[str, Any] = {"assignees": stored}
    claimer = interrupt.claimed_by
    if claimer is not None and stored and not assignment.is_assigned(
            assignment.Viewer.of(claimer), stored):
        update.update(claimed_by=None, claimed_at=None)
    with transaction.atomic():
        Interrupt.objects.filter(pk=interrupt.pk).update(**update)
        users_now, groups_now = assignees.decode(stored)
        changed(user, "interrupt.assign", interrupt,
                 {"users": users_now, "groups": groups_now,
                  "before": {"users": interrupt.assigned_users,
                             "groups": interrupt.assigned_groups},
                  "claim_ended": "claimed_by" in update})
    return _interrupt(interrupt.pk)


def _require_known(users: list[str], groups: list[str]) -> None:
    known = set(get_user_model().objects.filter(username__in=users)
                .values_list("username", flat=True))
    if missing := [u for u in users if u not in known]:
        raise InvalidRequest(f"no such users: {', '.join(missing)}", loc=["body", "users"])
    known = set(Group.objects.filter(name__in=groups).values_list("name", flat=True))
    if missing := [g for g in groups if g not in known]:
        raise InvalidRequest(f"no such groups: {', '.join(missing)}", loc=["body", "groups"])


def _claim_lost(interrupt_id: str) -> ForgeUIErrorType:
    row = Interrupt.objects.select_related("claimed_by").get(pk=interrupt_id)
    if row.status != InterruptStatus.PENDING:
        return stale_answer(interrupt_id, None)
    who = row.claimed_by.get_username() if row.claimed_by else "someone"
    return AlreadyClaimed(interrupt_id, who)


def changed(user: User, action: str, interrupt: Interrupt, detail: dict[str, Any]) -> None:
    """Audit a claim, release or assignment, and tell every inbox to redraw the row."""
    audit(user, action, object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id, detail=detail)
    publish_on_commit([EventDraft(EventKind.INTERRUPT_UPDATED, interrupt.run_id,
                                  interrupt.root_thread_id, interrupt.pk,
                                  {"action": action})])


def _interrupt(interrupt_id: str) -> Interrupt:
    interrupt = (Interrupt.objects.select_related("run", "claimed_by")
                 .filter(pk=interrupt_id).first())
    if interrupt is None:
        raise NotFound(f"no interrupt {interrupt_id!r}")
    return interrupt


def _check_answer(interrupt: Interrupt, value: Any, child_policy: str,
                  loc: list[str | int] | None = None) -> None:
    """Refuse an answer that does not fit its interrupt (``answer_rules``), naming where."""
    require_json(value, "value", loc)
    if child_policy not in ChildPolicy.values:
        raise InvalidRequest(f"child_policy must be one of {ChildPolicy.values}",
                             loc=["body", "child_policy"])
    try:
        answer_rules.check(interrupt.payload, value)
    except answer_rules.AnswerMismatch as exc:
        raise InvalidRequest(exc.message, loc=[*(loc or []), *exc.path]) from None


def _close(user: User, interrupt: Interrupt, status: InterruptStatus,
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


def _accept(user: User, interrupt: Interrupt, value: Any, steering: str | None,
            expected_checkpoint_id: str | None, child_policy: str,
            meta: dict[str, Any] | None = None, counted: Sequence[Approval] = ()) -> Answer:
    """Record the answer that decides ``interrupt``; ``steering`` is its sender's own note,
    ``counted`` the votes a policy counted toward it, each with its own note."""
    actor = _close(user, interrupt, InterruptStatus.ANSWERED, expected_checkpoint_id)
    answer = Answer.objects.create(
        interrupt=interrupt, user=actor, sign_in=method_of(actor), value=value,
        steering=(steering or "").strip(), child_policy=child_policy,
        expected_checkpoint_id=expected_checkpoint_id or "", meta=meta or {},
    )
    _keep_notes(interrupt, answer, counted)
    audit(user, "answer", object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id,
          detail={"answer_id": answer.pk, "value": value, "steering": answer.steering,
                  "child_policy": child_policy, **({"policy": meta} if meta else {})})
    publish_on_commit([EventDraft(EventKind.INTERRUPT_ANSWERED, interrupt.run_id,
                                  interrupt.root_thread_id, interrupt.pk,
                                  {"answered_by": getattr(actor, "username", None)})])
    run_status.answer_accepted(interrupt.run_id, interrupt.root_thread_id)
    enqueue_on_commit(apply_answer_task, answer.pk)
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


def stale_answer(interrupt_id: str, expected_checkpoint_id: str | None) -> StaleAnswer:
    """Why an answer lost, with what a client needs to catch up."""
    row = Interrupt.objects.select_related("run", "answered_by", "claimed_by").get(
        pk=interrupt_id)
    if row.status == InterruptStatus.PENDING and row.claimed_by_id is not None:
        reason = f"claimed meanwhile by {row.claimed_by.get_username()}"
    elif row.status == InterruptStatus.PENDING:
        reason = (f"the run moved on: checkpoint {expected_checkpoint_id!r} is not the "
                  f"latest ({row.checkpoint_id!r})")
    elif row.status == InterruptStatus.CANCELLED and row.answered_by is not None:
        reason = f"the run was cancelled at this breakpoint by {row.answered_by.get_username()}"
    elif row.answered_by is not None:
        reason = f"already answered by {row.answered_by.get_username()}"
    else:
        reason = f"the interrupt is {row.status}"
    return StaleAnswer(
        interrupt_id, row.status,
        row.answered_by.get_username() if row.answered_by else None,
        row.answered_at.isoformat() if row.answered_at else None, latest_metadata(row.run),
        reason,
    )


def latest_metadata(run: Run) -> dict[str, Any]:
    pending = Interrupt.objects.of_tree(run.root_thread_id).pending().order_by("created_at")
    return {"run_id": run.run_id, "thread_id": run.thread_id,
            "root_thread_id": run.root_thread_id, "checkpoint_id": run.latest_checkpoint_id,
            "status": run.status, "interrupts": list(pending.values_list("id", flat=True))}


def _refused(user: User, interrupt: Interrupt, stale: StaleAnswer, value: Any) -> None:
    audit(user, "answer.refused", object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=stale.latest.get("checkpoint_id") or "",
          detail={**stale.as_dict(), "value": clipped(value)})


REFUSED_VALUE_CHARS = 1000  # a refused value is kept as evidence, not in full


def clipped(value: Any) -> Any:
    """``value`` itself when its JSON is short; else its size and a preview, so a refused
    megabyte does not land in the append-only log."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= REFUSED_VALUE_CHARS:
        return value
    return {"truncated": True, "json_chars": len(text), "preview": text[:200]}


def add_steering_note(user: User, run_id: str, text: str, task_id: str | None = None,
                      interrupt_id: str | None = None) -> SteeringNote:
    """Record guidance for one run (or one of its tasks); a task hands it to the runtime."""
    require_role(user, Action.STEER, object_type="run", object_id=run_id, run_id=run_id)
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest("a steering note needs some text")
    run = _run(run_id)
    require_graph(run)
    interrupt = _interrupt(interrupt_id) if interrupt_id else None
    if interrupt is not None and interrupt.run_id != run.run_id:
        raise InvalidRequest(f"interrupt {interrupt_id!r} does not belong to run {run_id!r}")
    _require_steerable(user, run, task_id, interrupt)
    actor = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        reaches = task_id or (interrupt.task_id if interrupt is not None else "")
        note = SteeringNote.objects.create(run=run, interrupt=interrupt, user=actor,
                                           sign_in=method_of(actor), task_id=reaches,
                                           text=text.strip())
        audit(user, "steering.note", object_type="run", object_id=run.run_id,
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


def fork_thread(user: User, thread_id: str, checkpoint_id: str | None = None,
                inputs: dict[str, Any] | None = None,
                answers: dict[str, Any] | None = None) -> str:
    """Copy a root thread (as of ``checkpoint_id``, default latest) into a new one.

    With changes (edit-then-fork), keyed by interrupts pending at that checkpoint:
    ``inputs`` gives a paused node a new input, from which it runs again in the fork (a
    new start: the start role, and the graph's ``input_schema``); ``answers`` answers
    the fork's copy of an interrupt right away, as ``user``, if ``user`` may answer the
    original (``require_may_answer``). Both are audited as ``fork.edit`` on the new
    thread. Everything is checked first; the copy, its answers and audit rows are
    written in one transaction. The copy's interrupts keep the original's assignment
    and claim. A copy that cannot go on by itself (taken mid-step, or with an edited
    input) is recovered in a task.
    """
    require_role(user, Action.FORK, object_type="thread", object_id=thread_id[:255],
                 thread_id=thread_id[:255])
    if inputs:
        _require_start_for_input(user, thread_id)
    latest = _latest(thread_id)
    source = _fork_source(latest, thread_id, checkpoint_id)
    executor = registry.executor_for(latest.metadata.get("registered_as") or latest.graph)
    for name, changes in (("inputs", inputs), ("answers", answers)):
        if changes and name not in executor.fork_edits:
            raise InvalidRequest(f"this graph's forks take no pre-filled {name}: fork, then "
                                 f"answer the copy", loc=["body", name])
    edits = _fork_edits(user, executor, source, inputs or {}, answers or {})
    _require_no_policy_answers(user, edits)
    with transaction.atomic():
        new_thread = executor.fork_sync(thread_id, source.id, inputs=inputs or None)
        forked = _latest(new_thread)
        goes_on = forked.status in ("running", "failed")
        audit(user, "thread.fork", object_type="thread", object_id=thread_id,
              thread_id=thread_id, run_id=latest.run_id, before_checkpoint_id=source.id,
              after_checkpoint_id=forked.id,
              detail={"new_thread_id": new_thread, "new_run_id": forked.run_id,
                      "seq": _seq_of(thread_id, source.id), "recovered": goes_on,
                      "edits": edits})
        if edits:
            audit(user, "fork.edit", object_type="thread", object_id=new_thread,
                  thread_id=new_thread, run_id=forked.run_id, before_checkpoint_id=source.id,
                  after_checkpoint_id=forked.id,
                  detail={"source_thread_id": thread_id, "edits": edits})
        forked_runs = _credit_fork(user, latest.root_thread_id or thread_id, new_thread)
        _keep_assignment(latest.root_thread_id or thread_id, new_thread)
        if goes_on:  # those saved failed to be recovered are, at once: working
            run_status.mark_working([r.run_id for r in forked_runs
                                     if r.status == RunStatus.FAILED], new_thread)
            enqueue_on_commit(recover_run_task, new_thread)
        for edit in edits:
            if edit["kind"] == "answer":
                answer_interrupt(user, _copy_of(edit, new_thread).pk, edit["value"])
    return new_thread


def _require_start_for_input(user: User, thread_id: str) -> None:
    """A paused node given a new input runs again from it, as a start would."""
    try:
        require_role(user, Action.START_RUN, object_type="thread", object_id=thread_id[:255],
                     thread_id=thread_id[:255])
    except Forbidden as exc:
        raise Forbidden(f"a fork with an edited input starts that node again: {exc}") from None


def _credit_fork(user: User, source_thread: str, new_thread: str) -> list[Run]:
    """The fork's runs: started by whoever started their originals (the rule that nobody
    approves their own follows the run into its forks), forked by ``user``, and with
    their originals' input where the copy, taken past its first step, cannot tell it."""
    originals = {tuple(run.namespace): run for run in Run.objects.of_tree(source_thread)
                 .only("namespace", "input", "started_by")}
    actor = user if user is not None and user.is_authenticated else None
    forked = list(Run.objects.of_tree(new_thread).only("run_id", "namespace", "input",
                                                        "status"))
    for run in forked:
        original = originals.get(tuple(run.namespace))
        run.started_by_id = original.started_by_id if original is not None else None
        run.forked_by = actor
        if run.input is None and original is not None:
            run.input = original.input
    Run.objects.bulk_update(forked, ["started_by", "forked_by", "input"])
    return forked


def _keep_assignment(source_thread: str, new_thread: str) -> None:
    """Give the fork's interrupts the assignees and claim of those they copy: what a
    supervisor or a claim set after the pause lives only on the original's row."""
    held = {(row.task_id, row.order): row
            for row in Interrupt.objects.of_tree(source_thread).only(
                "task_id", "order", "assignees", "claimed_by", "claimed_at")}
    copies = []
    for copy in Interrupt.objects.of_tree(new_thread).pending():
        original = held.get((copy.task_id, copy.order))
        if original is not None:
            copy.assignees, copy.claimed_by_id, copy.claimed_at = (
                original.assignees, original.claimed_by_id, original.claimed_at)
            copies.append(copy)
    Interrupt.objects.bulk_update(copies, ["assignees", "claimed_by", "claimed_at"])


def _fork_edits(user: User, executor: Any, source: Head, inputs: dict[str, Any],
                answers: dict[str, Any]) -> list[dict[str, Any]]:
    """Check each change names an interrupt pending at ``source`` and is one ``user`` may
    make there; describe it for audit."""
    if both := set(inputs) & set(answers):
        raise InvalidRequest(f"interrupt {sorted(both)[0]!r}: edit its input or pre-fill its "
                             f"answer, not both", loc=["body", "answers"])
    pending = {i["id"]: i for i in source.interrupts}
    for summary in source.engine.children.values():
        pending.update((i["id"], i) for i in summary.get("interrupts") or [])
    edits = []
    for kind, changes in (("input", inputs), ("answer", answers)):
        for iid, value in changes.items():
            record, where = pending.get(iid), ["body", f"{kind}s", iid]
            if record is None:
                raise InvalidRequest(f"interrupt {iid!r} is not pending at checkpoint "
                                     f"{source.id!r}", loc=where)
            if kind == "answer":
                require_may_answer(user, _interrupt(iid), value, loc=where)
            else:
                require_json(value, "input", where)
                check_input(_input_schema_at(executor, record), value, where)
                problem = getattr(executor, "fork_input_problem", None)
                if problem is not None and (message := problem(record, value)):
                    raise InvalidRequest(message, loc=where)
            edits.append({"kind": kind, "interrupt_id": iid, "node": record["node"],
                          "namespace": record.get("namespace") or [], "value": value,
                          "task_id": record["task_id"], "order": record.get("order", 0)})
    return edits


def _input_schema_at(executor: Any, record: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a paused node's new input must fit: its run's ``input_schema`` when the
    node is the run's first, which was given the run's input; else none is known."""
    for name in (record.get("namespace") or [])[1:]:
        executor = executor.shape.sub_agents.get(name)
        if executor is None:
            return None
    first = executor.shape.nodes[:1]
    return executor.input_schema if first == (record["node"],) else None


def _require_no_policy_answers(user: User, edits: list[dict[str, Any]]) -> None:
    """Nobody approves their own, and a fork counts both its original's starter and its
    forker as its own: an answer under a policy is given in the fork's inbox, by others."""
    for edit in edits:
        original = (Interrupt.objects.select_related("run")
                    .filter(pk=edit["interrupt_id"]).first())
        if edit["kind"] == "answer" and original is not None and (
                policy := approvals.policy_for(original)) is not None:
            raise _policy_refusal(user, original, f"policy {policy.name!r}: a fork cannot "
                                  f"come with its answer; others approve it in the inbox")


def _copy_of(edit: dict[str, Any], new_thread: str) -> Interrupt:
    """The fork's copy of the interrupt an edit names: same task, same order."""
    return Interrupt.objects.of_tree(new_thread).pending().get(task_id=edit["task_id"],
                                                                order=edit["order"])


def _fork_source(latest: Head, thread_id: str, checkpoint_id: str | None) -> Head:
    if not checkpoint_id:
        return latest
    found = DjangoCheckpointStore().load_by_id_sync(checkpoint_id)
    if found is None or found.thread_id != thread_id:
        raise NotFound(f"no checkpoint {checkpoint_id!r} in thread {thread_id!r}")
    return found


def _seq_of(thread_id: str, checkpoint_id: str) -> int:
    """The checkpoint's 1-based place in its thread, as the timeline numbers it."""
    listed = DjangoCheckpointStore().list_sync(thread_id)
    for index, cp in enumerate(listed):
        if cp.id == checkpoint_id:
            return cp.position or index + 1
    return 0


def recover_run(user: User, run_id: str) -> None:
    """Go on with a failed (or abandoned) root run in a task: the failed step runs again."""
    require_role(user, Action.RECOVER, object_type="run", object_id=run_id, run_id=run_id)
    run = _run(run_id)
    if run.parent_run_id is not None:
        raise InvalidRequest(f"run {run_id!r} is a sub-agent; recover its root run")
    if run.status not in (RunStatus.FAILED, RunStatus.RUNNING):
        raise InvalidRequest(f"run {run_id!r} is {run.status}; only a failed or running run "
                             f"can be recovered")
    require_graph(run)
    with transaction.atomic():
        audit(user, "run.recover", object_type="run", object_id=run_id, run_id=run_id,
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
    require_role(user, Action.CANCEL, object_type="run", object_id=run_id, run_id=run_id)
    run = _run(run_id)
    if run.status not in LIVE:
        raise InvalidRequest(f"run {run_id!r} is {run.status}")
    reason = None if reason is None else cancel_reason(reason)
    require_graph(run)
    at = list(Interrupt.objects.filter(run=run, kind__in=BREAKPOINT_KINDS).pending()
              .select_related("run")) if reason else []
    with transaction.atomic():
        audit(user, "run.cancel", object_type="run", object_id=run_id, run_id=run_id,
              thread_id=run.root_thread_id, before_checkpoint_id=run.latest_checkpoint_id,
              detail={"reason": reason} if reason else {})
        for interrupt in at:
            with transaction.atomic():  # one answered meanwhile keeps its answer
                try:
                    _accept_cancel(user, interrupt, reason or "")
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
    require_role(user, Action.ANSWER, object_type="interrupt", object_id=interrupt_id)
    interrupt = _interrupt(interrupt_id)
    if not interrupt.is_breakpoint:
        raise InvalidRequest("only a breakpoint (interrupt_before / interrupt_after) is "
                             "cancelled from its answer; this interrupt takes a value")
    reason = cancel_reason(reason)
    require_answerable(user, interrupt)
    require_graph(interrupt.run)
    _require_may_count(user, interrupt, approvals.policy_for(interrupt), False)
    try:
        with transaction.atomic():
            return _accept_cancel(user, interrupt, reason)
    except StaleAnswer as stale:
        _refused(user, interrupt, stale, {"cancel": clipped(reason)})
        raise


def _accept_cancel(user: User, interrupt: Interrupt, reason: str) -> Answer:
    actor = _close(user, interrupt, InterruptStatus.CANCELLED)
    answer = Answer.objects.create(interrupt=interrupt, user=actor, sign_in=method_of(actor),
                                   kind=AnswerKind.CANCEL, value=None, reason=reason)
    audit(user, "breakpoint.cancel", object_type="interrupt", object_id=interrupt.pk,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id,
          detail={"answer_id": answer.pk, "decision": AnswerKind.CANCEL.label,
                  "reason": reason, "node": interrupt.node, "kind": interrupt.kind})
    publish_on_commit([EventDraft(EventKind.INTERRUPT_CANCELLED, interrupt.run_id,
                                  interrupt.root_thread_id, interrupt.pk,
                                  {"cancelled_by": getattr(actor, "username", None)})])
    enqueue_on_commit(apply_answer_task, answer.pk)
    return answer


def require_graph(run: Run) -> None:
    """Raise ``GraphUnavailable`` when the run's graph cannot be loaded here.

    Checked before anything is recorded: an accepted answer (or note, or cancel) for a
    graph no worker can load would only fail later, in the background.
    """
    registry.executor_for(run.graph)


def _run(run_id: str) -> Run:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"no run {run_id!r}")
    return run


def _latest(thread_id: str) -> Head:
    latest = DjangoCheckpointStore().load_head_sync(thread_id)
    if latest is None:
        raise NotFound(f"no thread {thread_id!r}")
    return latest


def require_json(value: Any, what: str, loc: list[str | int] | None = None) -> None:
    """Refuse a value that is not JSON, or holds text the database cannot store."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{what} must be JSON: {exc}", loc=loc) from None
    if problem := storable.text_problem(value):
        raise InvalidRequest(f"{what} cannot be used: {problem}", loc=loc)
