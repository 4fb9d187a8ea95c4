"""An answer under an approval policy: what it counts as, and the count with the
interrupt's row locked; without a policy (or once the policy is met) it goes on to be
recorded. Returns ``Decided``: the answer or the counted approval, and the progress.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from forgeui.models import Answer, Approval, EventKind, Interrupt, Vote
from forgeui.models.events import EventDraft, publish_on_commit
from forgeui.runs.exceptions import AlreadyCounted, InvalidRequest
from forgeui.runs.policies import approvals, votes
from forgeui.runs.policies.config import Policy
from forgeui.runs.services._common import User, audit, latest_metadata, stale_answer
from forgeui.runs.services._recording import Given, accept
from forgeui.runs.services.checks import policy_refusal, require_eligible


@dataclass(frozen=True, slots=True)
class Decided:
    """What an answer came to: the answer the run goes on with, or (under an approval
    policy not yet met) the approval counted toward it; ``progress`` says where the
    policy stands, "" where none applies."""

    made: Answer | Approval
    progress: str = ""

    @property
    def answer(self) -> Answer | None:
        return self.made if isinstance(self.made, Answer) else None

    @property
    def approval(self) -> Approval | None:
        """The counted approval (or rejection) while the policy is not yet met."""
        return self.made if isinstance(self.made, Approval) else None


def decide(user: User, interrupt: Interrupt, given: Given, policy: Policy | None,
           vote: Vote | None) -> Decided:
    """Record the answer, or under ``policy`` count ``vote`` toward it."""
    if policy is None:
        return Decided(accept(user, interrupt, given))
    if vote is None:  # the system, rejecting (a deadline's default): that ends it
        return Decided(accept(user, interrupt, given, meta={
            "policy": policy.name, "decided_by": "system", "decision": "rejected",
            "approvals": [], "rejections": []}))
    if policy.approvals == policy.rejections == 1:  # one vote decides: the answer records it
        answer = accept(user, interrupt, given, meta=approvals.single_vote(policy, user, vote))
        return Decided(answer, approvals.single_vote_text(policy, user, vote))
    return _count_vote(user, interrupt, given, policy, vote)


def require_may_count(user: User, interrupt: Interrupt, policy: Policy | None,
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
        raise policy_refusal(user, interrupt, f"policy {policy.name!r}: only people approve; "
                                              f"the system may only reject")
    require_eligible(user, interrupt, policy)
    if vote is None:
        raise InvalidRequest(f"policy {policy.name!r}: answer approve or reject (an edit or "
                             f"a response would need approvals of its own); "
                             f"{votes.words(policy)}", loc=["body", "value"])
    return vote


def _count_vote(user: User, interrupt: Interrupt, given: Given, policy: Policy,
                vote: Vote) -> Decided:
    """Count one person's vote with the interrupt's row locked, so two at once both count
    (from two people) and only the one that meets the policy records the answer."""
    locked = Interrupt.objects.select_for_update().filter(pk=interrupt.pk).pending()
    if given.expected_checkpoint_id:
        locked = locked.filter(checkpoint_id=given.expected_checkpoint_id)
    if not locked.exists():
        raise stale_answer(interrupt.pk, given.expected_checkpoint_id)
    approval, tally = approvals.record(user, interrupt, policy, vote, given.value,
                                       (given.steering or "").strip())
    if approval is None:
        raise _already_counted(user, interrupt, tally)
    audit(user, f"approval.{vote}", object_type="interrupt", object_id=interrupt.pk,
          team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id,
          detail={"approval_id": approval.pk, "policy": policy.name, "value": given.value,
                  "steering": approval.steering, "progress": tally.text()})
    if not tally.decided:
        publish_on_commit([EventDraft(EventKind.INTERRUPT_UPDATED, interrupt.run_id,
                                      interrupt.root_thread_id, interrupt.pk,
                                      {"action": f"approval.{vote}"})])
        return Decided(approval, tally.text())
    # The answer carries the deciding vote's note; the checkpoint was checked above.
    meeting = replace(given, steering=approval.steering, expected_checkpoint_id=None)
    answer = accept(user, interrupt, meeting, meta=tally.meta(),
                    counted=[*tally.approvals, *tally.rejections])
    return Decided(answer, tally.text())


def _already_counted(user: User, interrupt: Interrupt,
                     tally: approvals.Tally) -> AlreadyCounted:
    mine = next(a for a in (*tally.approvals, *tally.rejections)
                if a.user_id == getattr(user, "pk", None))
    row = Interrupt.objects.select_related("run").get(pk=interrupt.pk)
    return AlreadyCounted(interrupt.pk, mine.user.get_username(), mine.created_at.isoformat(),
                          latest_metadata(row.run), mine.vote, tally.text())
