"""``/api/graphs`` and ``/api/runs``: what can run, what ran, and starting, cancelling and
recovering runs."""

from datetime import datetime
from typing import Annotated, Any, Literal

from django.db.models import Prefetch, Q
from django.http import HttpRequest
from ninja import Field, FilterSchema, Query, Router, Schema, Status
from ninja.filter_schema import FilterLookup
from ninja.pagination import paginate

from forgeui.api.interrupts import InterruptOut
from forgeui.api.schemas import (
    BODY_ERRORS,
    CONFLICT,
    ERRORS,
    Body,
    Id,
    NewThreadId,
    Page,
    RunStatus,
    Text,
    When,
    get_one,
)
from forgeui.models import Interrupt, Run
from forgeui.permissions.roles import Action, allowed, teams_where
from forgeui.permissions.teams import team_of_graph
from forgeui.runs import registry, services
from forgeui.team.sensitive import mask

router = Router(tags=["forge"])


class GraphList(Schema):
    items: list[str] = Field(description="registered graph names (FORGE_GRAPHS keys) of "
                                         "the caller's teams")
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
    def resolve_output(obj: Any, context: Any = None) -> Any:
        return shown(obj, obj.output, context) if obj.status == "completed" else None

    @staticmethod
    def resolve_input(obj: Any, context: Any = None) -> Any:
        return shown(obj, obj.input, context)


def shown(run: Run, value: Any, context: Any) -> Any:
    """``value`` (the run's input or output) with the keys its interrupts mark sensitive
    masked, unless the caller may answer in the run's team."""
    request = (context or {}).get("request")
    if request is not None and allowed(request.auth, Action.ANSWER, run.team):
        return value
    marked = Interrupt.objects.filter(run_id=run.run_id).values_list("sensitive", flat=True)
    return mask(value, [key for keys in marked for key in keys or ()])


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


class CancelIn(Body):
    reason: str | None = Field(
        None, description="why (up to 4000 characters); a run paused at a breakpoint of "
                          "its own is then recorded there as cancelled at breakpoint")


class CancelOut(Schema):
    run_id: str
    status: Literal["cancelling"] = "cancelling"


class RecoverOut(Schema):
    run_id: str
    status: Literal["recovering"] = "recovering"


@router.get("/health", auth=None, response={200: dict[str, str]}, tags=["meta"])
def health(request: HttpRequest) -> dict[str, str]:
    """Liveness probe; the only anonymous route."""
    return {"status": "ok"}


@router.get("/graphs", response={200: GraphList, **ERRORS})
def list_graphs(request: HttpRequest) -> dict[str, Any]:
    """The graphs of the caller's teams (with a role held everywhere: all of them)."""
    names = readable_graphs(request.auth)
    return {"items": names, "count": len(names)}


def readable_graphs(user: Any) -> list[str]:
    """Registered graphs whose runs ``user`` may read; one owned by no team only with a
    role held everywhere."""
    names = registry.graph_names()
    teams = teams_where(user, Action.READ)
    if teams is None:
        return names
    return [name for name in names if team_of_graph(name) in teams]


@router.get("/runs", response={200: list[RunOut], **ERRORS})
@paginate(Page)
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> Any:
    """Newest first; only the runs of the caller's teams."""
    return filters.filter(Run.objects.visible_to(request.auth)
                          .select_related("started_by", "forked_by")
                          .order_by("-created_at", "run_id"))


# One path belongs to one router: in two, Django would send this POST to the list's view.
@router.post("/runs", response={201: StartRunOut, **BODY_ERRORS, **CONFLICT})
def start_run(request: HttpRequest, body: StartRunIn) -> Any:
    """Start a registered graph (supervisor); it runs in a task."""
    started = services.start_run(request.auth, body.graph, body.input, body.thread_id)
    return Status(201, started)


@router.get("/runs/{run_id}", response={200: RunDetailOut, **ERRORS})
def get_run(request: HttpRequest, run_id: Id) -> Any:
    """One run, and its whole tree (root first) with each run's pending interrupts."""
    readable = Run.objects.visible_to(request.auth)
    run = get_one(readable.select_related("started_by", "forked_by"), "run", run_id)
    pending = (Interrupt.objects.visible_to(request.auth).inbox().select_related("answered_by")
               .prefetch_related("approvals__user"))
    tree = readable.of_tree(run.root_thread_id).prefetch_related(
        Prefetch("interrupts", queryset=pending, to_attr="pending"))
    run.tree = sorted(tree, key=lambda r: (r.parent_run_id is not None, len(r.namespace)))
    return run


@router.post("/runs/{run_id}/cancel", response={202: CancelOut, **BODY_ERRORS, **CONFLICT})
def cancel_run(request: HttpRequest, run_id: Id, body: CancelIn | None = None) -> Any:
    """Cancel a run and everything below it; a task applies it. With a ``reason``, a run
    paused at a breakpoint is recorded as cancelled at that breakpoint."""
    services.cancel_run(request.auth, run_id, reason=body.reason if body else None)
    return Status(202, {"run_id": run_id})


@router.post("/runs/{run_id}/recover", response={202: RecoverOut, **ERRORS, **CONFLICT})
def recover_run(request: HttpRequest, run_id: Id) -> Any:
    """Go on with a failed root run (supervisor): its failed step runs again in a task."""
    services.recover_run(request.auth, run_id)
    return Status(202, {"run_id": run_id})
