"""Answering interrupts: one by id, several of a tree at once, or the one a target names.
The first step of every answer's path: checks, then ``voting``, then ``_recording``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from forgeui.models import ChildPolicy, Interrupt
from forgeui.permissions.roles import Action
from forgeui.runs.exceptions import InvalidRequest, NotFound, StaleAnswer
from forgeui.runs.policies import approvals
from forgeui.runs.services._common import (
    User,
    get_interrupt,
    get_run,
    latest_metadata,
    refused,
    require_role,
    stale_answer,
)
from forgeui.runs.services._recording import Given
from forgeui.runs.services.checks import require_may_answer
from forgeui.runs.services.voting import Decided, decide, require_may_count
from runtime.errors import AmbiguousResume, StaleResumeTarget


def answer_interrupt(user: User, interrupt_id: str, value: Any, steering: str | None = None,
                     expected_checkpoint_id: str | None = None,
                     child_policy: str = ChildPolicy.LEAVE) -> Decided:
    """Accept one answer in one transaction, then apply it in a task.

    Under an approval policy the answer is one person's approval (or rejection): it is
    counted (``Decided.approval``, with the policy's progress) until the policy is met;
    the answer that meets it is recorded and applied like any. Raises ``StaleAnswer``
    (with who answered when, and where the run stands) when the interrupt is no longer
    pending or ``expected_checkpoint_id`` is not its run's latest, ``AlreadyCounted``
    when this person's approval is already in; then only an ``answer.refused`` audit row
    is written.
    """
    interrupt = get_interrupt(user, interrupt_id)
    require_may_answer(user, interrupt, value, child_policy)
    policy = approvals.policy_for(interrupt)
    vote = require_may_count(user, interrupt, policy, value)
    try:
        with transaction.atomic():
            given = Given(value, steering, expected_checkpoint_id, child_policy)
            return decide(user, interrupt, given, policy, vote)
    except StaleAnswer as stale:
        refused(user, interrupt, stale, value)
        raise


def resume_map(user: User, thread_id: str,
               answers: dict[str, Any]) -> list[Decided]:
    """Answer several interrupts of one tree at once: all are accepted, or none is."""
    if not answers:
        raise InvalidRequest("answers is empty")
    interrupts = [get_interrupt(user, interrupt_id) for interrupt_id in answers]
    for interrupt in interrupts:
        if thread_id not in (interrupt.root_thread_id, interrupt.thread_id):
            raise NotFound(f"interrupt {interrupt.pk!r} is not part of thread {thread_id!r}")
        if interrupt.sub_agent_id:  # answering a sub-agent by its place in the tree is a
            # targeted resume, whichever route carries it: the same role as /api/resume
            require_role(user, Action.RESUME_TARGETED, interrupt.team, object_type="interrupt",
                         object_id=interrupt.pk, run_id=interrupt.run_id,
                         thread_id=interrupt.root_thread_id)
        require_may_answer(user, interrupt, answers[interrupt.pk],
                           loc=["body", "answers", interrupt.pk])
    policies = [approvals.policy_for(interrupt) for interrupt in interrupts]
    votes = [require_may_count(user, interrupt, policy, answers[interrupt.pk])
             for interrupt, policy in zip(interrupts, policies, strict=True)]
    current = interrupts[0]
    try:
        with transaction.atomic():
            accepted = []
            for current, policy, vote in zip(interrupts, policies, votes, strict=True):
                accepted.append(decide(user, current, Given(answers[current.pk]), policy,
                                       vote))
            return accepted
    except StaleAnswer as stale:
        refused(user, current, stale, answers[current.pk])
        raise


def resume_targeted(user: User, run_id: str, value: Any, task_id: str | None = None,
                    interrupt_id: str | None = None, namespace: list[str] | None = None,
                    steering: str | None = None) -> Decided:
    """Answer the one pending interrupt a target names, leaving siblings alone.

    Nothing pending there raises ``StaleResumeTarget`` (``StaleAnswer`` when the named
    interrupt was answered); several pending raises ``AmbiguousResume``.
    """
    run = get_run(user, run_id)
    require_role(user, Action.RESUME_TARGETED, run.team, object_type="run", object_id=run_id,
                 run_id=run_id)
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
