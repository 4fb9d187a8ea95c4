"""What an answer counts as under a policy: an approval, a rejection, or neither.

By default an answer approves when it says so in one of the shapes forge, the quick
start, Agent Inbox and LangChain use, and every call it decides is approved; it rejects
when every call is rejected. A policy's ``answers`` says it its own way for its
interrupts: a rule (the ``auto_approve`` language) on ``{"answer": value}`` for each side
it names. An answer that both approves and rejects, or does neither, is neither: it
never counts as an approval. Where one person's vote decides (one approval), an edit is
that person's approval of the edited call and a response their rejection of it; where
more are needed, the others would be approving something else, so those are neither.
"""

from __future__ import annotations

import json
from typing import Any

from forgeui.models import Interrupt, Vote
from forgeui.runs.policies import rules
from forgeui.runs.policies.config import Policy

APPROVING_TYPES = frozenset({"accept", "approve"})
REJECTING_TYPES = frozenset({"reject", "ignore"})
# What one deciding person's edit or response amounts to.
DECIDING_TYPES = {"edit": "accept", "response": "reject", "respond": "reject"}
FLAGS = ("approved", "ok")  # {"approved": true}, the quick start's {"ok": true}


def vote_of(policy: Policy, interrupt: Interrupt, value: Any) -> Vote | None:
    """APPROVE, REJECT, or None when the answer is neither (or claims to be both)."""
    if interrupt.is_breakpoint:  # its answer only lets the node run; cancelling is its "no"
        return Vote.APPROVE
    decides_alone = policy.approvals == 1
    default, answers = default_vote(value, decides_alone), policy.answers or {}
    approves = _says(answers.get("approve"), value, default == Vote.APPROVE)
    rejects = _says(answers.get("reject"), value, default == Vote.REJECT)
    if approves == rejects:
        return None
    return Vote.APPROVE if approves else Vote.REJECT


def _says(rule: dict[str, Any] | None, value: Any, default: bool) -> bool:
    return default if rule is None else rules.matches(rule, {"answer": value})


def default_vote(value: Any, decides_alone: bool = False) -> Vote | None:
    """What forge reads an answer as when its policy does not say (``decides_alone``:
    one person's vote decides, so their edit approves and their response rejects)."""
    if isinstance(value, bool):
        return Vote.APPROVE if value else Vote.REJECT
    if isinstance(value, list):  # Agent Inbox: one HumanResponse per request
        return _calls(value, decides_alone)
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("decisions"), list):  # an agent's request, LangChain's HITL
        return _calls(value["decisions"], decides_alone)
    said: set[Vote | None] = {Vote.APPROVE if value[f] else Vote.REJECT for f in FLAGS
                              if isinstance(value.get(f), bool)}
    kind = value.get("type", value.get("decision"))
    if kind is not None:
        said.add(_kind(kind, decides_alone))
    return said.pop() if len(said) == 1 else None


def _calls(responses: list[Any], decides_alone: bool) -> Vote | None:
    """Approve when every call is approved, reject when every call is rejected."""
    kinds = {_kind(r.get("type"), decides_alone) if isinstance(r, dict) else None
             for r in responses}
    return kinds.pop() if len(kinds) == 1 else None


def _kind(kind: Any, decides_alone: bool) -> Vote | None:
    if decides_alone and isinstance(kind, str):
        kind = DECIDING_TYPES.get(kind, kind)
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
