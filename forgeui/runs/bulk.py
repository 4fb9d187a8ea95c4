"""One answer for many interrupts: which interrupts a bulk action settles, and what
became of each.

A bulk action sends one value to every row, so it fits only rows that value settles:
Approve and Reject a plain yes/no question, Continue a breakpoint, Accept a proposal
that offers accept. A breakpoint is never "rejected" in bulk: its answer is only
recorded and its node runs anyway; stopping it takes a cancel with a reason, one by one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import QuerySet

from forgeui.models import Interrupt
from forgeui.permissions.roles import Action
from forgeui.runs import foreign, services
from forgeui.runs.answer_rules import declared_actions, declared_schema
from forgeui.runs.exceptions import (
    Forbidden,
    GraphUnavailable,
    InvalidRequest,
    NotFound,
    StaleAnswer,
)

BulkAction = Literal["approve", "reject", "continue", "accept"]
BulkResult = Literal["accepted", "stale", "forbidden", "not_found", "invalid", "unavailable",
                     "not_settled"]
# What each bulk action answers with.
VALUES: dict[BulkAction, Any] = {"approve": True, "reject": False, "continue": True,
                                 "accept": {"type": "accept", "args": None}}
MAX_BULK = 500


@dataclass(frozen=True, slots=True)
class BulkOutcome:
    """What became of one interrupt of a bulk answer."""

    interrupt_id: str
    outcome: BulkResult
    detail: str = ""
    answer_id: int | None = None
    answered_by: str | None = None
    answered_at: str | None = None


def settles(action: BulkAction, interrupt: Interrupt) -> bool:
    """Whether ``action``'s one value is a whole answer to ``interrupt``."""
    if action == "continue" or interrupt.is_breakpoint:
        return action == "continue" and interrupt.is_breakpoint
    if foreign.actions_of(interrupt.payload) is not None:  # answered in its own shape
        return action in ("approve", "reject") and foreign.settles_all(interrupt.payload,
                                                                       action)
    actions = declared_actions(interrupt.payload)
    if action == "accept":
        return "accept" in actions
    return not actions and declared_schema(interrupt.payload) is None


def why_not(action: BulkAction | None, interrupt: Interrupt) -> str:
    """Why a row was left alone, in the words the inbox shows."""
    if interrupt.is_breakpoint:
        return "a breakpoint: Continue it, or open it to cancel the run with a reason"
    if action == "continue":
        return "not a breakpoint: it needs its own answer, open it"
    return "needs a specific answer, open it"


def settleable(action: BulkAction, interrupts: Iterable[Interrupt],
               limit: int = MAX_BULK) -> list[str]:
    """The ids of ``interrupts`` that ``action`` settles, at most ``limit``."""
    found: list[str] = []
    for interrupt in interrupts:
        if len(found) >= limit:
            break
        if settles(action, interrupt):
            found.append(interrupt.pk)
    return found


def bulk_answer(user: services.User, interrupt_ids: list[str], value: Any,
                steering: str | None = None,
                action: BulkAction | None = None) -> list[BulkOutcome]:
    """Answer each interrupt with ``value`` through ``answer_interrupt``, one by one.

    Each answer has its own transaction and compare-and-set, so one stale or forbidden
    interrupt costs only itself; the outcome of every id is reported, in the given order.
    With an ``action`` (the inbox's buttons) only rows it settles are answered; without
    one (the API's value) only a ``false`` to a breakpoint is left alone, as it would not
    stop the node.
    """
    services.require_role(user, Action.ANSWER, object_type="bulk",
                          object_id=f"{len(interrupt_ids)} ids")
    ids = list(dict.fromkeys(interrupt_ids))
    if not ids:
        raise InvalidRequest("nothing to answer: no interrupt ids", loc=["body", "ids"])
    if len(ids) > MAX_BULK:
        raise InvalidRequest(f"at most {MAX_BULK} interrupts at once", loc=["body", "ids"])
    services.require_json(value, "value")
    found = Interrupt.objects.visible_to(user).in_bulk(ids)  # another team's: not found
    outcomes = [_one(user, found.get(interrupt_id), interrupt_id, value, steering, action)
                for interrupt_id in ids]
    services.audit(user, "answer.bulk", object_type="bulk", object_id=f"{len(ids)} interrupts",
                   detail={"value": value, "action": action, "steering": steering or "",
                           "outcomes": {o.interrupt_id: o.outcome for o in outcomes}})
    return outcomes


def answerable(user: services.User) -> QuerySet[Interrupt]:
    """The interrupts ``user``'s roles let them answer (in their teams): where "all
    matching the filter" starts."""
    return Interrupt.objects.visible_to(user, Action.ANSWER)


def _one(user: services.User, interrupt: Interrupt | None, interrupt_id: str, value: Any,
         steering: str | None, action: BulkAction | None) -> BulkOutcome:
    if interrupt is None:
        return BulkOutcome(interrupt_id, "not_found", f"no interrupt {interrupt_id!r}")
    if not _fits(action, interrupt, value):
        return BulkOutcome(interrupt_id, "not_settled", why_not(action, interrupt))
    if action is not None and foreign.actions_of(interrupt.payload):
        value = foreign.answer(interrupt.payload, [{"type": action}] * len(
            foreign.actions_of(interrupt.payload) or []))
    try:
        decided = services.answer_interrupt(user, interrupt_id, value, steering=steering)
    except StaleAnswer as stale:
        return BulkOutcome(interrupt_id, "stale", stale.reason, answered_by=stale.answered_by,
                           answered_at=stale.answered_at)
    except Forbidden as exc:
        return BulkOutcome(interrupt_id, "forbidden", str(exc))
    except NotFound as exc:
        return BulkOutcome(interrupt_id, "not_found", str(exc))
    except InvalidRequest as exc:
        return BulkOutcome(interrupt_id, "invalid", str(exc))
    except GraphUnavailable as exc:
        return BulkOutcome(interrupt_id, "unavailable", str(exc))
    if decided.answer is None:  # counted toward its policy; the row stays pending
        return BulkOutcome(interrupt_id, "accepted", decided.progress)
    return BulkOutcome(interrupt_id, "accepted", decided.progress, answer_id=decided.answer.pk)


def _fits(action: BulkAction | None, interrupt: Interrupt, value: Any) -> bool:
    if action is not None:
        return settles(action, interrupt)
    return not (interrupt.is_breakpoint and value is False)
