"""The rules an answer obeys before anything is written, however it comes (directly, in a
resume map, in bulk, pre-filled in a fork, as a note beside it): the role, assignment
and claims, a graph that loads here, eligibility under a policy, the value's fit.
"""

from __future__ import annotations

from typing import Any

from forgeui.models import ChildPolicy, Interrupt
from forgeui.permissions.roles import Action
from forgeui.runs import answer_rules
from forgeui.runs.exceptions import Forbidden, InvalidRequest
from forgeui.runs.policies import approvals
from forgeui.runs.policies.config import Policy
from forgeui.runs.services._common import User, audit, require_graph, require_json, require_role
from forgeui.team import assignment


def require_may_answer(user: User, interrupt: Interrupt, value: Any,
                       child_policy: str = ChildPolicy.LEAVE,
                       loc: list[str | int] | None = None) -> None:
    """Every rule an answer to ``interrupt`` obeys, however it comes: directly, in a
    resume map or in bulk, or pre-filled in a fork of its thread (checked on this, the
    source's interrupt). The role, assignment and claims, a graph that loads here, the
    value's fit; raises (audited where refused) before anything is written."""
    require_role(user, Action.ANSWER, interrupt.team, object_type="interrupt",
                 object_id=interrupt.pk, run_id=interrupt.run_id,
                 thread_id=interrupt.root_thread_id)
    require_answerable(user, interrupt)
    require_graph(interrupt.run)
    require_eligible(user, interrupt, approvals.policy_for(interrupt))
    check_answer(interrupt, value, child_policy, loc=loc or ["body", "value"])


def require_answerable(user: User, interrupt: Interrupt,
                       viewer: assignment.Viewer | None = None) -> None:
    """Raise ``Forbidden`` (audited) when the interrupt is assigned to or claimed by others."""
    viewer = viewer or assignment.Viewer.of(user)
    if assignment.may_answer(viewer, interrupt):
        return
    reason = assignment.refusal(viewer, interrupt)
    audit(user, "answer.denied", object_type="interrupt", object_id=interrupt.pk,
          team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          detail={"reason": reason})
    raise Forbidden(f"you may not answer this interrupt: {reason}")


def require_eligible(user: User, interrupt: Interrupt, policy: Policy | None) -> None:
    """``Forbidden`` (audited) when a person's answer could not count under ``policy``."""
    actor = user if user is not None and user.is_authenticated else None
    if policy is not None and actor is not None and (
            reason := approvals.why_not_counted(policy, actor, interrupt)) is not None:
        raise policy_refusal(user, interrupt, reason)


def policy_refusal(user: User, interrupt: Interrupt, reason: str) -> Forbidden:
    audit(user, "answer.denied", object_type="interrupt", object_id=interrupt.pk,
          team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          detail={"reason": reason})
    return Forbidden(reason)


def check_answer(interrupt: Interrupt, value: Any, child_policy: str,
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
