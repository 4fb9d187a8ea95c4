"""A bulk answer's results as a reviewer reads them: each row named by its summary, what
became of it in plain words ("Approved", "Not answered: already answered by alice")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from forgeui.models import Interrupt
from forgeui.runs.bulk import BulkOutcome
from forgeui.runs.wording import answer_words, interrupt_summary
from forgeui.web.visibility import shown

# Why a row was not answered, said without ids or schema terms; "stale" and "forbidden"
# carry their own plain reason (who answered or claimed it, whom it is assigned to).
NOT_ANSWERED = {
    "not_found": "it no longer exists",
    "invalid": "it asks for a specific answer, not Approve or Reject; open it to answer",
    "unavailable": "its graph cannot be loaded on this server right now",
}


@dataclass(frozen=True, slots=True)
class BulkLine:
    interrupt_id: str
    summary: str  # what the row asked ("" when the interrupt is gone)
    said: str  # what became of it
    ok: bool


def report(outcomes: Sequence[BulkOutcome], value: Any, user: Any) -> list[BulkLine]:
    """One line per outcome, in the order answered, each row summed up as ``user`` may
    see it; interrupts read in one query."""
    rows = Interrupt.objects.select_related("run").in_bulk([o.interrupt_id for o in outcomes])
    return [line(outcome, seen(user, rows.get(outcome.interrupt_id)), value)
            for outcome in outcomes]


def seen(user: Any, interrupt: Interrupt | None) -> Interrupt | None:
    return None if interrupt is None else shown(user, interrupt)


def line(outcome: BulkOutcome, interrupt: Interrupt | None, value: Any) -> BulkLine:
    summary = interrupt_summary(interrupt) if interrupt is not None else ""
    if outcome.outcome == "accepted":
        said = (answer_words(value, interrupt.payload, interrupt.kind) if interrupt is not None
                else answer_words(value))
        return BulkLine(outcome.interrupt_id, summary, said, ok=True)
    return BulkLine(outcome.interrupt_id, summary, f"Not answered: {why_not(outcome)}",
                    ok=False)


def why_not(outcome: BulkOutcome) -> str:
    if outcome.outcome == "stale":
        if outcome.answered_by:
            return f"already answered by {outcome.answered_by}"
        # "the run moved on: checkpoint '…' is not the latest": the ids help nobody here
        return outcome.detail.split(":", 1)[0] or "it is no longer pending"
    if outcome.outcome == "not_settled":
        return outcome.detail  # already in words: why this action does not fit the row
    if outcome.outcome == "forbidden":
        return outcome.detail.split(": ", 1)[-1] or "you may not answer it"
    return NOT_ANSWERED.get(outcome.outcome, "it could not be answered")
