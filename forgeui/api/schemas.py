"""The API's request and response shapes: field names here are a contract.

Request bodies forbid unknown fields and are strict about types (``"1"`` is not an
integer), so a typo is a 422 naming the field instead of a silently ignored option.
Query and path strings refuse NUL characters (PostgreSQL cannot store or compare them);
date filters take a date (midnight UTC) or an RFC 3339 date-time with its zone.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, Literal

from django.db.models import Q
from ninja import Field, FilterSchema, Schema
from ninja.filter_schema import FilterLookup
from ninja.pagination import LimitOffsetPagination
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    StringConstraints,
    model_validator,
)

from forgeui.requests.graph import GRAPH as REQUEST_GRAPH
from forgeui.runs.services import Decided
from forgeui.runs.services.forking import wording as fork_start
from forgeui.runs.wording import interrupt_summary

# -- building blocks ---------------------------------------------------------------------


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not accepted")
    return value


DATE = r"\d{4}-\d{2}-\d{2}"
DATE_OR_DATETIME = re.compile(
    rf"{DATE}|{DATE}[Tt ]\d{{2}}:\d{{2}}:\d{{2}}(\.\d{{1,6}})?([Zz]|[+-]\d{{2}}:\d{{2}})")


def _rfc3339(value: Any) -> Any:
    """A date, or a date-time with its zone: nothing pydantic would read as a timestamp."""
    if isinstance(value, str) and not DATE_OR_DATETIME.fullmatch(value):
        raise ValueError("use a date (2025-01-31) or a date-time with a zone "
                         "(2025-01-31T09:00:00Z)")
    return value


def _instant(value: datetime | date) -> datetime:
    """A date is its midnight UTC; an offset that leaves years 1..9999 is refused."""
    if not isinstance(value, datetime):
        value = datetime.combine(value, time(), tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("date-time out of range") from None


Id = Annotated[str, StringConstraints(min_length=1, max_length=255), AfterValidator(_no_nul)]
Text = Annotated[str, StringConstraints(max_length=255), AfterValidator(_no_nul)]
When = Annotated[datetime | date, BeforeValidator(_rfc3339), AfterValidator(_instant)]
# A thread id a caller chooses: no "/" (that marks a sub-agent's thread).
NewThreadId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$")]
NoteText = Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
RunStatus = Literal["running", "interrupted", "completed", "cancelled", "failed"]
InterruptStatus = Literal["pending", "answered", "cancelled"]
ChildPolicy = Literal["leave", "cancel"]


class Body(Schema):
    """Base of every request body: strict types, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Page(LimitOffsetPagination):
    """``limit`` (1-200, default 50) and ``offset``; lists answer ``{items, count}``."""

    class Input(Schema):
        limit: int = Field(50, ge=1, le=200)
        offset: int = Field(0, ge=0, le=1_000_000_000)


# -- errors ------------------------------------------------------------------------------


class ErrorOut(Schema):
    detail: str


class FieldError(Schema):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(Schema):
    detail: list[FieldError]


class LatestOut(Schema):
    """Where a run stands now, for a client whose request came too late."""

    run_id: str | None = None
    thread_id: str | None = None
    root_thread_id: str | None = None
    checkpoint_id: str | None = None
    status: str | None = None
    interrupts: list[str] = Field(default_factory=list, description="pending interrupt ids")


class ConflictOut(Schema):
    """409: the target is no longer pending (or not only one is pending)."""

    detail: str
    interrupt_id: str | None = None
    status: str | None = Field(None, description="the interrupt's status now")
    answered_by: str | None = Field(None, description="username of whoever answered first")
    answered_at: datetime | None = None
    claimed_by: str | None = Field(None, description="who holds the claim, when that is why")
    graph: str | None = Field(None, description="the graph that cannot be loaded, when that "
                                                "is why")
    latest: LatestOut


ERRORS: dict[int, type[Schema]] = {
    400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut,
}
BODY_ERRORS: dict[int, type[Schema]] = {**ERRORS, 413: ErrorOut}


# -- graphs and runs ---------------------------------------------------------------------


class GraphList(Schema):
    items: list[str] = Field(description="registered graph names (FORGE_GRAPHS keys)")
    count: int


class StartRunIn(Body):
    graph: Text
    input: Any = None
    thread_id: NewThreadId | None = None


class StartRunOut(Schema):
    run_id: str | None = Field(description="None while the start is still queued")
    thread_id: str
    status: str


class RunOut(Schema):
    run_id: str
    thread_id: str
    root_thread_id: str
    parent_run_id: str | None
    graph: str
    namespace: list[str]
    sub_agent_id: str | None
    status: str
    checkpoint_id: str = Field(alias="latest_checkpoint_id")
    started_by: str | None = Field(description="who started it (a fork: its original)")
    forked_by: str | None = Field(None, description="who made this fork, if it is one")
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_sub_agent_id(obj: Any) -> str | None:
        return obj.sub_agent_id or None

    @staticmethod
    def resolve_started_by(obj: Any) -> str | None:
        return obj.started_by.get_username() if obj.started_by_id else None

    @staticmethod
    def resolve_forked_by(obj: Any) -> str | None:
        return obj.forked_by.get_username() if obj.forked_by_id else None


class AssigneesOut(Schema):
    users: list[str]
    groups: list[str]


class VoteOut(Schema):
    """One person's vote counted under an approval policy, with the note they gave."""

    user: str
    vote: Literal["approve", "reject"]
    at: datetime
    note: str


class InterruptOut(Schema):
    id: str
    run_id: str
    thread_id: str = Field(description="thread of the paused run")
    root_thread_id: str = Field(description="thread of the whole run tree")
    graph: str
    node: str
    task_id: str
    namespace: list[str]
    sub_agent_id: str | None
    checkpoint_id: str
    payload: Any
    summary: str = Field(description="one line: what is asked, and about what (the fields "
                                     "the graph marked with interrupt(summary=...))")
    order: int
    kind: str
    status: str
    created_at: datetime
    deadline_at: datetime | None
    answered_at: datetime | None
    answered_by: str | None
    assignees: AssigneesOut = Field(description="who may answer; both empty: any reviewer")
    claimed_by: str | None
    claimed_at: datetime | None
    request_id: str | None = Field(None, description="the approval request it asks "
                                                     "(/api/requests), if any")
    approvals: list[VoteOut] = Field(default_factory=list, description=(
        "under an approval policy, every vote counted so far, oldest first"))

    @staticmethod
    def resolve_graph(obj: Any) -> str:
        return obj.run.graph

    @staticmethod
    def resolve_summary(obj: Any) -> str:
        return interrupt_summary(obj)

    @staticmethod
    def resolve_request_id(obj: Any) -> str | None:
        return obj.root_thread_id if obj.run.graph == REQUEST_GRAPH else None

    @staticmethod
    def resolve_assignees(obj: Any) -> dict[str, list[str]]:
        return {"users": obj.assigned_users, "groups": obj.assigned_groups}

    @staticmethod
    def resolve_claimed_by(obj: Any) -> str | None:
        return obj.claimed_by.get_username() if obj.claimed_by_id else None

    @staticmethod
    def resolve_sub_agent_id(obj: Any) -> str | None:
        return obj.sub_agent_id or None

    @staticmethod
    def resolve_answered_by(obj: Any) -> str | None:
        return obj.answered_by.get_username() if obj.answered_by_id else None

    @staticmethod
    def resolve_approvals(obj: Any) -> list[dict[str, Any]]:
        return [vote.entry() for vote in sorted(obj.approvals.all(), key=lambda v: v.pk)]


class RunNodeOut(Schema):
    """One run of a tree, with its pending interrupts."""

    run_id: str
    thread_id: str
    parent_run_id: str | None
    namespace: list[str]
    sub_agent_id: str | None
    status: str
    checkpoint_id: str = Field(alias="latest_checkpoint_id")
    interrupts: list[InterruptOut] = Field(alias="pending")

    @staticmethod
    def resolve_sub_agent_id(obj: Any) -> str | None:
        return obj.sub_agent_id or None


class RunDetailOut(RunOut):
    input: Any
    output: Any = Field(description="the root's output once completed, else null")
    error: Any
    tree: list[RunNodeOut] = Field(description="every run of the tree, root first")

    @staticmethod
    def resolve_output(obj: Any) -> Any:
        return obj.output if obj.status == "completed" else None


# -- checkpoints -------------------------------------------------------------------------


class CheckpointOut(Schema):
    """A checkpoint row; the fields below ``created_at`` come from its stored record."""

    id: str
    thread_id: str
    run_id: str
    parent_id: str | None
    seq: int = Field(description="position in the thread, from 1")
    node: str | None
    status: str
    step: int
    created_at: datetime
    namespace: list[str]
    interrupt_payload: Any
    pending_input: Any
    state: dict[str, Any]
    history: list[Any]
    interrupts: list[Any] = Field(description="this run's pending interrupts at this point")
    resolved: list[Any] = Field(description="interrupts answered or cancelled so far")
    steering: list[Any]
    output: Any
    error: Any = Field(description="why it failed; null where nothing did")
    forked_from: str | None
    next_step: str = Field(description="on a fork's first checkpoint: what resuming does")

    @staticmethod
    def resolve_status(obj: Any) -> str:
        """A fork's first checkpoint waiting to be driven reads ``forked``, not failed."""
        return fork_start.shown_status(obj)

    @staticmethod
    def resolve_error(obj: Any) -> Any:
        return fork_start.shown_error(obj)

    @staticmethod
    def resolve_next_step(obj: Any) -> str:
        return fork_start.next_step(obj)

    @staticmethod
    def resolve_seq(obj: Any) -> int:
        return int(obj.position)

    @staticmethod
    def resolve_created_at(obj: Any) -> datetime:
        return datetime.fromtimestamp(obj.created_at / 1000, UTC)

    @staticmethod
    def resolve_parent_id(obj: Any) -> str | None:
        return obj.parent_id or None

    @staticmethod
    def resolve_node(obj: Any) -> str | None:
        return obj.node or None


class CheckpointStateOut(Schema):
    """One checkpoint's state alone: small however long the thread's history has grown."""

    id: str
    thread_id: str
    seq: int = Field(description="position in the thread, from 1")
    state: dict[str, Any]

    @staticmethod
    def resolve_seq(obj: Any) -> int:
        return int(obj.position)


# -- answering, steering, forking, cancelling ---------------------------------------------


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


class AssignIn(Body):
    """Who may answer; both lists empty opens the interrupt to every reviewer."""

    users: list[Text] = Field(default_factory=list, max_length=100, description="usernames")
    groups: list[Text] = Field(default_factory=list, max_length=100, description="group names")


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
    def _one_selection(self) -> BulkResumeIn:
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


class ForkIn(Body):
    checkpoint_id: Id | None = None
    inputs: dict[str, Any] | None = Field(
        None, description="edit-then-fork: interrupt id (pending at that checkpoint) -> new "
                          "input for the paused node, which runs again from it in the fork")
    answers: dict[str, Any] | None = Field(
        None, description="interrupt id -> an answer given to the fork's copy of it at once")


class ForkOut(Schema):
    thread_id: str


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


class CancelIn(Body):
    reason: str | None = Field(
        None, description="why (up to 4000 characters); a run paused at a breakpoint of "
                          "its own is then recorded there as cancelled at breakpoint")


class CancelOut(Schema):
    run_id: str
    status: Literal["cancelling"] = "cancelling"


class BreakpointCancelIn(Body):
    reason: str = Field(description="why the run is cancelled: required, up to 4000 "
                                     "characters; shown in the decisions list and audit log")


class BreakpointCancelOut(AnswerRowOut):
    """202: recorded as cancelled at breakpoint; a task cancels the paused run."""

    reason: str
    status: Literal["cancelling"] = "cancelling"


class RecoverOut(Schema):
    run_id: str
    status: Literal["recovering"] = "recovering"


# -- audit -------------------------------------------------------------------------------


class AuditOut(Schema):
    id: int
    actor: str | None
    sign_in: str = Field(description="how the actor signed in: password, sso, token; "
                                     "empty for the system")
    action: str
    object_type: str
    object_id: str
    run_id: str
    thread_id: str
    before_checkpoint_id: str
    after_checkpoint_id: str
    detail: dict[str, Any]
    created_at: datetime

    @staticmethod
    def resolve_actor(obj: Any) -> str | None:
        return obj.actor_name or None  # the name the audit chain hashed


# -- list filters ------------------------------------------------------------------------


class RunFilters(FilterSchema):
    graph: Annotated[Text | None, FilterLookup("graph")] = None
    status: Annotated[RunStatus | None, FilterLookup("status")] = None
    started_by: Annotated[Text | None, FilterLookup("started_by__username")] = Field(
        None, description="username")
    created_after: Annotated[When | None, FilterLookup("created_at__gte")] = None
    created_before: Annotated[When | None, FilterLookup("created_at__lt")] = None
    root_only: bool = Field(False, description="only root runs (no sub-agents)")

    def filter_root_only(self, value: bool) -> Q:
        return Q(parent_run_id__isnull=True) if value else Q()


class InterruptFilters(Schema):
    """The inbox's filters, applied by the same queryset methods the pages use."""

    status: InterruptStatus | None = None
    graph: Text | None = None
    sub_agent_id: Text | None = None
    namespace: Text | None = Field(
        None, description="run-tree path prefix, '/'-joined: 'supervisor/research_agent'")
    run_id: Text | None = None
    root_thread_id: Text | None = None
    tab: Literal["assigned", "queue", "done"] | None = Field(
        None, description="assigned: pending and assigned to or claimed by me; queue: "
                          "unclaimed that I may answer; done: answered by me")
    q: Text | None = Field(None, description="search payloads and run inputs (PostgreSQL "
                                             "full-text; words, \"phrases\", -not)")

    def apply(self, found: Any, viewer: Any = None) -> Any:
        if self.tab == "assigned":
            found = found.assigned_to(viewer)
        elif self.tab == "queue":
            found = found.queue_for(viewer)
        elif self.tab == "done":
            found = found.done_by(viewer.user_id)
        if self.status:
            found = found.filter(status=self.status)
        if self.run_id:
            found = found.filter(run_id=self.run_id)
        if self.root_thread_id:
            found = found.of_tree(self.root_thread_id)
        prefix = [part for part in (self.namespace or "").split("/") if part]
        return (found.of_graph(self.graph or "").of_sub_agent(self.sub_agent_id or "")
                .under_namespace(prefix).search(self.q or "").by_age())


class AuditFilters(Schema):
    actor: Text | None = Field(None, description="username")
    action: Text | None = Field(None, description="action prefix: 'answer' also matches "
                                                  "'answer.refused'")
    object: Text | None = Field(None, description="an object, run or thread id")
    created_after: When | None = None
    created_before: When | None = None

    def apply(self, found: Any) -> Any:
        return found.matching(actor=self.actor or "", action=self.action or "",
                              obj=self.object or "", since=self.created_after,
                              until=self.created_before)
