"""Answering: one interrupt, a targeted one, a map, many at once; breakpoints and notes."""

from datetime import datetime
from typing import Any, Literal, Self

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import model_validator

from forgeui.api.interrupts import InterruptFilters
from forgeui.api.schemas import (
    BODY_ERRORS,
    CONFLICT,
    Body,
    ChildPolicy,
    Id,
    NoteText,
    Text,
)
from forgeui.runs import bulk, services
from forgeui.runs.services import Decided
from forgeui.team import assignment

router = Router(tags=["forge"])


class ResumeIn(Body):
    value: Any = Field(description="the answer; checked against the payload's answer_schema")
    steering: NoteText | None = Field(None, description="a note stored apart from the answer")
    expected_checkpoint_id: Id | None = Field(
        None, description="refuse (409) unless the interrupt is still at this checkpoint")
    child_policy: ChildPolicy = "leave"


class TargetedResumeIn(Body):
    run_id: Id
    task_id: Id | None = None
    interrupt_id: Id | None = None
    namespace: list[Text] | None = Field(None, description="must equal the run's namespace")
    value: Any
    steering: NoteText | None = None


class ResumeMapIn(Body):
    thread_id: Id
    answers: dict[Id, Any] = Field(min_length=1, description="interrupt id -> answer")


class AnswerRowOut(Schema):
    """An ``Answer`` row as the API names it: which interrupt, run and thread."""

    answer_id: int = Field(alias="pk")
    interrupt_id: str
    run_id: str
    thread_id: str

    @staticmethod
    def resolve_run_id(obj: Any) -> str:
        return obj.interrupt.run_id

    @staticmethod
    def resolve_thread_id(obj: Any) -> str:
        return obj.interrupt.root_thread_id


class AcceptedOut(Schema):
    """202: the answer is recorded and a task applies it to the run (``accepted``); or,
    under an approval policy not yet met, this person's approval or rejection is counted
    and the interrupt stays pending (``approval_recorded``)."""

    status: Literal["accepted", "approval_recorded"]
    answer_id: int | None = Field(description="the answer the run resumes with; null "
                                              "while approvals are still counted")
    approval_id: int | None = Field(None, description="this person's counted approval")
    interrupt_id: str
    run_id: str
    thread_id: str
    approvals: str | None = Field(None, description='under a policy, e.g. "1 of 2 '
                                  'approvals: alice; waiting for one more from finance"')

    @staticmethod
    def resolve_status(obj: Decided) -> str:
        return "approval_recorded" if obj.approval is not None else "accepted"

    @staticmethod
    def resolve_answer_id(obj: Decided) -> int | None:
        return obj.answer.pk if obj.answer is not None else None

    @staticmethod
    def resolve_approval_id(obj: Decided) -> int | None:
        return obj.approval.pk if obj.approval is not None else None

    @staticmethod
    def resolve_interrupt_id(obj: Decided) -> str:
        return obj.made.interrupt_id

    @staticmethod
    def resolve_run_id(obj: Decided) -> str:
        return obj.made.interrupt.run_id

    @staticmethod
    def resolve_thread_id(obj: Decided) -> str:
        return obj.made.interrupt.root_thread_id

    @staticmethod
    def resolve_approvals(obj: Decided) -> str | None:
        return obj.progress or None


class AcceptedList(Schema):
    items: list[AcceptedOut]
    count: int


class BulkFilterIn(Body):
    """Which pending interrupts, as ``GET /api/interrupts`` filters them."""

    graph: Text | None = None
    sub_agent_id: Text | None = None
    namespace: Text | None = None
    run_id: Text | None = None
    root_thread_id: Text | None = None
    tab: Literal["assigned", "queue"] | None = None
    q: Text | None = None

    def interrupt_ids(self, found: Any, viewer: Any, limit: int) -> list[str]:
        filters = InterruptFilters(status="pending", **self.model_dump())
        return list(filters.apply(found, viewer).values_list("id", flat=True)[:limit])


class BulkResumeIn(Body):
    """One answer for many interrupts: name them (``ids``) or filter them (``filter``)."""

    ids: list[Id] | None = Field(None, min_length=1, max_length=500)
    filter: BulkFilterIn | None = Field(None, description="every pending interrupt matching")
    value: Any = Field(description="the answer, the same for every interrupt")
    steering: NoteText | None = None

    @model_validator(mode="after")
    def _one_selection(self) -> Self:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give either ids or filter")
        return self


class BulkOutcomeOut(Schema):
    interrupt_id: str
    outcome: Literal["accepted", "stale", "forbidden", "not_found", "invalid", "unavailable",
                     "not_settled"]
    detail: str = Field(description="why, when not accepted")
    answer_id: int | None
    answered_by: str | None = Field(description="who answered first, when stale")
    answered_at: datetime | None


class BulkResultOut(Schema):
    items: list[BulkOutcomeOut]
    count: int
    accepted: int


class BreakpointCancelIn(Body):
    reason: str = Field(description="why the run is cancelled: required, up to 4000 "
                                     "characters; shown in the decisions list and audit log")


class BreakpointCancelOut(AnswerRowOut):
    """202: recorded as cancelled at breakpoint; a task cancels the paused run."""

    reason: str
    status: Literal["cancelling"] = "cancelling"


class SteeringIn(Body):
    run_id: Id
    task_id: Id | None = None
    interrupt_id: Id | None = None
    text: NoteText


class SteeringOut(Schema):
    id: int
    run_id: str
    task_id: str | None
    interrupt_id: str | None
    text: str
    user: str | None
    created_at: datetime

    @staticmethod
    def resolve_task_id(obj: Any) -> str | None:
        return obj.task_id or None

    @staticmethod
    def resolve_user(obj: Any) -> str | None:
        return obj.user.get_username() if obj.user_id else None


# Before /interrupts/{interrupt_id}: Django would match that path first and answer 405.
@router.post("/interrupts/bulk_resume", response={200: BulkResultOut, **BODY_ERRORS})
def bulk_resume(request: HttpRequest, body: BulkResumeIn) -> Any:
    """One answer for many interrupts, each with its own compare-and-set; every id's
    outcome (accepted, stale with who answered, forbidden, ...) is reported. A ``false``
    is not given to a breakpoint (``not_settled``): it would not stop the node there."""
    viewer = assignment.Viewer.of(request.auth)
    ids = body.ids if body.filter is None else body.filter.interrupt_ids(
        bulk.answerable(request.auth), viewer, bulk.MAX_BULK)
    outcomes = bulk.bulk_answer(request.auth, ids, body.value, body.steering)
    accepted = sum(o.outcome == "accepted" for o in outcomes)
    return {"items": outcomes, "count": len(outcomes), "accepted": accepted}


@router.post("/interrupts/{interrupt_id}/cancel",
             response={202: BreakpointCancelOut, **BODY_ERRORS, **CONFLICT})
def cancel_at_breakpoint(request: HttpRequest, interrupt_id: Id,
                         body: BreakpointCancelIn) -> Any:
    """At a breakpoint (``interrupt_before`` / ``interrupt_after``), cancel the paused run
    instead of continuing: the guarded node never runs. 409 when someone decided first."""
    return Status(202, services.cancel_at_breakpoint(request.auth, interrupt_id, body.reason))


@router.post("/interrupts/{interrupt_id}/resume",
             response={202: AcceptedOut, **BODY_ERRORS, **CONFLICT})
def resume_interrupt(request: HttpRequest, interrupt_id: Id, body: ResumeIn) -> Any:
    """Answer one interrupt: 202 once recorded; 409 if someone answered first."""
    answer = services.answer_interrupt(
        request.auth, interrupt_id, body.value, steering=body.steering,
        expected_checkpoint_id=body.expected_checkpoint_id, child_policy=body.child_policy)
    return Status(202, answer)


@router.post("/resume", response={202: AcceptedOut, **BODY_ERRORS, **CONFLICT})
def resume_targeted(request: HttpRequest, body: TargetedResumeIn) -> Any:
    """Answer the one pending interrupt a run/task/interrupt/namespace target names."""
    answer = services.resume_targeted(
        request.auth, body.run_id, body.value, task_id=body.task_id,
        interrupt_id=body.interrupt_id, namespace=body.namespace, steering=body.steering)
    return Status(202, answer)


@router.post("/resume_map", response={202: AcceptedList, **BODY_ERRORS, **CONFLICT})
def resume_map(request: HttpRequest, body: ResumeMapIn) -> Any:
    """Answer several interrupts of one tree: all are recorded, or none."""
    answers = services.resume_map(request.auth, body.thread_id, body.answers)
    return Status(202, {"items": answers, "count": len(answers)})


@router.post("/steering", response={201: SteeringOut, **BODY_ERRORS, **CONFLICT})
def add_steering(request: HttpRequest, body: SteeringIn) -> Any:
    """A note for one run (or task), stored apart from any answer."""
    note = services.add_steering_note(request.auth, body.run_id, body.text,
                                      task_id=body.task_id, interrupt_id=body.interrupt_id)
    return Status(201, note)
