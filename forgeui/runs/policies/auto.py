"""``auto_approve``: a policy's rule answers an interrupt as soon as it pauses, or not at all.

The answer is recorded as the policy's (no person; its metadata names the policy and the
rule), through the same conditional update as a person's answer, so a person who
answered first wins and the rule does nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from forgeui.models import Answer, AuditEntry, EventKind, Interrupt, InterruptStatus
from forgeui.models.events import EventDraft
from forgeui.runs import answer_rules, run_status
from forgeui.runs.policies import rules
from forgeui.runs.policies.approvals import policy_for
from forgeui.runs.policies.config import Policy, policies
from forgeui.runs.registry import REQUEST_GRAPH


def may_decide(interrupt_ids: list[str]) -> bool:
    """Whether ``decide`` could answer any of these: no database read, so a caller on an
    event loop can ask before it hands ``decide`` to a thread."""
    return bool(interrupt_ids) and any(p.auto_approve for p in policies().by_name.values())


def decide(interrupt_ids: list[str]) -> list[Answer]:
    """Answer each pending interrupt whose policy's rule approves it; the answers made."""
    if not may_decide(interrupt_ids):
        return []
    made = []
    for interrupt in Interrupt.objects.filter(pk__in=interrupt_ids).pending().select_related(
            "run"):
        policy = policy_for(interrupt)
        if policy is None or policy.auto_approve is None or not approves(policy, interrupt):
            continue
        value = approving_value(interrupt, policy)
        if value is not None and (answer := _accept(interrupt, policy, value)) is not None:
            made.append(answer)
    return made


def approves(policy: Policy, interrupt: Interrupt) -> bool:
    """Whether the rule holds for what is proposed: every call of an agent's request,
    else the payload's ``args`` (or the payload itself)."""
    assert policy.auto_approve is not None
    found = subjects(interrupt)
    return bool(found) and all(rules.matches(policy.auto_approve, s) for s in found)


def subjects(interrupt: Interrupt) -> list[Any]:
    payload = interrupt.payload
    if interrupt.run.graph == REQUEST_GRAPH and isinstance(payload, dict):
        return [call.get("args") if isinstance(call, dict) else None
                for call in payload.get("calls") or []]
    if isinstance(payload, dict) and isinstance(payload.get("args"), dict):
        return [payload["args"]]
    return [payload]


def approving_value(interrupt: Interrupt, policy: Policy) -> Any:
    """The answer that approves, in the interrupt's own terms; None when it has none."""
    payload = interrupt.payload
    if interrupt.run.graph == REQUEST_GRAPH and isinstance(payload, dict):
        value: Any = {"decisions": [{"type": "approve"} for _ in payload.get("calls") or []],
                      "message": f"approved by policy {policy.name}"}
    elif interrupt.is_breakpoint or not answer_rules.declared_actions(payload):
        value = True
    elif "accept" in answer_rules.declared_actions(payload):
        value = {"type": "accept", "args": None}
    else:
        return None
    try:
        answer_rules.check(payload, value)
    except answer_rules.AnswerMismatch:
        return None
    return value


def _accept(interrupt: Interrupt, policy: Policy, value: Any) -> Answer | None:
    meta = {"policy": policy.name, "decided_by": "policy", "decision": "approved",
            "rule": policy.auto_approve, "approvals": [], "rejections": []}
    with transaction.atomic():
        closed = Interrupt.objects.filter(pk=interrupt.pk).pending().update(
            status=InterruptStatus.ANSWERED, answered_at=timezone.now(), answered_by=None)
        if not closed:
            return None
        answer = Answer.objects.create(interrupt=interrupt, user=None, value=value, meta=meta)
        AuditEntry.objects.create(
            action="answer.auto_approved", object_type="interrupt", object_id=interrupt.pk,
            run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
            before_checkpoint_id=interrupt.checkpoint_id,
            detail={"answer_id": answer.pk, "policy": policy.name, "rule": policy.auto_approve,
                    "value": value})
        answered = EventDraft(EventKind.INTERRUPT_ANSWERED, interrupt.run_id,
                              interrupt.root_thread_id, interrupt.pk,
                              {"answered_by": None, "policy": policy.name})
        run_status.answer_accepted(interrupt.run_id, interrupt.root_thread_id, [answered])
    return answer
