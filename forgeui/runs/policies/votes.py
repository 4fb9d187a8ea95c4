"""What an answer counts as under a policy: an approval, a rejection, or neither.

By default an answer approves when it says so in one of the shapes forge, the quick
start, Agent Inbox and LangChain use, and every call it decides is approved; it rejects
when every call is rejected. A policy's ``answers`` says it its own way for its
interrupts: a rule (the ``auto_approve`` language) on ``{"answer": value}`` for each side
it names. An answer that both approves and rejects, or does neither, is neither: it
never counts as an approval.
"""

from __future__ import annotations

import json
from typing import Any

from forgeui.models import Interrupt, Vote
from forgeui.runs.policies import rules
from forgeui.runs.policies.config import Policy

APPROVING_TYPES = frozenset({"accept", "approve"})
REJECTING_TYPES = frozenset({"reject", "ignore"})
FLAGS = ("approved", "ok")  # {"approved": true}, the quick start's {"ok": true}


def vote_of(policy: Policy, interrupt: Interrupt, value: Any) -> Vote | None:
    """APPROVE, REJECT, or None when the answer is neither (or claims to be both)."""
    if interrupt.is_breakpoint:  # its answer only lets the node run; cancelling is its "no"
        return Vote.APPROVE
    default, answers = default_vote(value), policy.answers or {}
    approves = _says(answers.get("approve"), value, default == Vote.APPROVE)
    rejects = _says(answers.get("reject"), value, default == Vote.REJECT)
    if approves == rejects:
        return None
    return Vote.APPROVE if approves else Vote.REJECT


def _says(rule: dict[str, Any] | None, value: Any, default: bool) -> bool:
    return default if rule is None else rules.matches(rule, {"answer": value})


def default_vote(value: Any) -> Vote | None:
    """What forge reads an answer as when its policy does not say."""
    if isinstance(value, bool):
        return Vote.APPROVE if value else Vote.REJECT
    if isinstance(value, list):  # Agent Inbox: one HumanResponse per request
        return _calls(value)
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("decisions"), list):  # an agent's request, LangChain's HITL
        return _calls(value["decisions"])
    said: set[Vote | None] = {Vote.APPROVE if value[f] else Vote.REJECT for f in FLAGS
                              if isinstance(value.get(f), bool)}
    kind = value.get("type", value.get("decision"))
    if kind is not None:  # an edit or a response is neither, whatever flag rides along
        said.add(_kind(kind))
    return said.pop() if len(said) == 1 else None


def _calls(responses: list[Any]) -> Vote | None:
    """Approve when every call is approved, reject when every call is rejected."""
    kinds = {_kind(r.get("type")) if isinstance(r, dict) else None for r in responses}
    return kinds.pop() if len(kinds) == 1 else None


def _kind(kind: Any) -> Vote | None:
    if kind in APPROVING_TYPES:
        return Vote.APPROVE
    return Vote.REJECT if kind in REJECTING_TYPES else None


def words(policy: Policy) -> str:
    """What approves and what rejects under ``policy``, for a refusal's message."""
    answers = policy.answers or {}
    sides = [f"{side}: an answer matching {json.dumps(answers[side])}" if side in answers else
             DEFAULTS[side] for side in ("approve", "reject")]
    return "; ".join(sides)


DEFAULTS = {
    "approve": 'approve: true, {"ok": true}, {"approved": true}, {"type": "accept"} or '
               'every call approved ({"decisions": [...]} or a list of responses)',
    "reject": 'reject: false, {"ok": false}, {"approved": false}, {"type": "reject"} or '
              "every call rejected",
}
