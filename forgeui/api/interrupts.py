"""``/api/interrupts``: the inbox as JSON, one interrupt, claims and assignment."""

from datetime import datetime
from typing import Any, Literal

from django.db.models import Q
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate

from forgeui.api.schemas import (
    BODY_ERRORS,
    CONFLICT,
    ERRORS,
    Body,
    Id,
    InterruptStatus,
    Page,
    Text,
    get_one,
)
from forgeui.models import Interrupt
from forgeui.requests.graph import GRAPH as REQUEST_GRAPH
from forgeui.runs import services
from forgeui.runs.wording import interrupt_summary, summarize
from forgeui.team import assignment
from forgeui.team.sensitive import mask, masked_payload, may_see

router = Router(tags=["forge"])


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
    def resolve_payload(obj: Any, context: Any = None) -> Any:
        """Whole for who may answer it; sensitive keys masked for everyone else."""
        return shown_payload(obj, context)

    @staticmethod
    def resolve_summary(obj: Any, context: Any = None) -> str:
        if not obj.sensitive or sees_whole(obj, context):
            return interrupt_summary(obj)
        keys = obj.sensitive
        return summarize(mask(obj.payload, keys), obj.node, obj.kind, obj.summary_fields,
                         mask(obj.run.input, keys))

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
            if viewer.answer_teams is not None and not viewer.unrestricted:
                found = found.filter(team__in=sorted(viewer.answer_teams))
        elif self.tab == "done":
            found = found.done_by(viewer.user_id)
        if self.status:
            found = found.filter(status=self.status)
        if self.run_id:
            found = found.filter(run_id=self.run_id)
        if self.root_thread_id:
            found = found.of_tree(self.root_thread_id)
        if self.q:  # a masked value must not be found by searching for it
            found = found.filter(searchable_by(viewer))
        prefix = [part for part in (self.namespace or "").split("/") if part]
        return (found.of_graph(self.graph or "").of_sub_agent(self.sub_agent_id or "")
                .under_namespace(prefix).search(self.q or "").by_age())


def searchable_by(viewer: Any) -> Q:
    """The rows whose payload ``viewer`` reads whole: none masked, or theirs to answer."""
    if viewer.unrestricted or viewer.answer_teams is None:
        return Q()
    return Q(sensitive=[]) | Q(team__in=sorted(viewer.answer_teams))


class AssignIn(Body):
    """Who may answer; both lists empty opens the interrupt to every reviewer."""

    users: list[Text] = Field(default_factory=list, max_length=100, description="usernames")
    groups: list[Text] = Field(default_factory=list, max_length=100, description="group names")


def sees_whole(interrupt: Any, context: Any) -> bool:
    """May the caller of this response see ``interrupt``'s sensitive fields (who may
    answer it)? Not when the response has no caller."""
    request = (context or {}).get("request")
    return request is not None and may_see(request.auth, interrupt)


def shown_payload(interrupt: Any, context: Any) -> Any:
    """The payload as the caller of this response may see it (masked when unknown)."""
    if not interrupt.sensitive or sees_whole(interrupt, context):
        return interrupt.payload
    return masked_payload(interrupt)


def shown(user: Any) -> Any:
    """The interrupts ``user`` may read, with what ``InterruptOut`` reads of their run,
    people and votes."""
    return (Interrupt.objects.visible_to(user).select_related("run", "answered_by", "claimed_by")
            .prefetch_related("approvals__user"))


@router.get("/interrupts", response={200: list[InterruptOut], **ERRORS})
@paginate(Page)
def list_interrupts(request: HttpRequest, filters: Query[InterruptFilters]) -> Any:
    """Oldest first; ``status=pending`` is the inbox; ``tab`` is relative to the caller.
    Only the interrupts of the caller's teams; sensitive fields masked unless the caller
    may answer."""
    return filters.apply(shown(request.auth), assignment.Viewer.of(request.auth))


@router.get("/interrupts/{interrupt_id}", response={200: InterruptOut, **ERRORS})
def get_interrupt(request: HttpRequest, interrupt_id: Id) -> Any:
    return get_one(shown(request.auth), "interrupt", interrupt_id)


@router.post("/interrupts/{interrupt_id}/claim",
             response={200: InterruptOut, **ERRORS, **CONFLICT})
def claim_interrupt(request: HttpRequest, interrupt_id: Id) -> Any:
    """Take a pending interrupt: until released only you may answer it; 409 if taken."""
    return services.claim_interrupt(request.auth, interrupt_id)


@router.post("/interrupts/{interrupt_id}/release",
             response={200: InterruptOut, **ERRORS, **CONFLICT})
def release_interrupt(request: HttpRequest, interrupt_id: Id) -> Any:
    """Give your claim back (supervisors: anyone's)."""
    return services.release_interrupt(request.auth, interrupt_id)


@router.post("/interrupts/{interrupt_id}/assign",
             response={200: InterruptOut, **BODY_ERRORS, **CONFLICT})
def assign_interrupt(request: HttpRequest, interrupt_id: Id, body: AssignIn) -> Any:
    """Name the users and groups who may answer (supervisor)."""
    return services.assign_interrupt(request.auth, interrupt_id, body.users, body.groups)
