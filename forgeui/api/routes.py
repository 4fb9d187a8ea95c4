"""The JSON API under ``/api/``: thin handlers over ``forgeui.runs.services``.

Handlers validate (``forgeui.api.schemas``), call one service or one queryset, and return.
Every refusal is mapped to HTTP here, once, by the exception handlers at the bottom:
the dashboard's errors (``forgeui.runs.exceptions``), the runtime's (``runtime.errors``),
ninja's and Django's. Nothing reaches the client as a 500 page; the catch-all handler
logs and answers JSON, and the test suite asserts it never fires.
"""

import logging
from functools import partial
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import register_converter
from ninja import NinjaAPI, Query, Router, Status
from ninja.errors import AuthorizationError, HttpError, ValidationError
from ninja.pagination import paginate

from forgeui.api import requests as agent_requests
from forgeui.api.auth import CsrfFailed, api_auth, login_required_for_docs
from forgeui.api.pagination import BytePage
from forgeui.api.parser import MAX_BODY_BYTES, MAX_DEPTH, BodyRefused, StrictJSONParser
from forgeui.api.schemas import (
    BODY_ERRORS,
    ERRORS,
    AcceptedList,
    AcceptedOut,
    AssignIn,
    AuditFilters,
    AuditOut,
    BreakpointCancelIn,
    BreakpointCancelOut,
    BulkResultOut,
    BulkResumeIn,
    CancelIn,
    CancelOut,
    CheckpointOut,
    CheckpointStateOut,
    ConflictOut,
    ForkIn,
    ForkOut,
    GraphList,
    Id,
    InterruptFilters,
    InterruptOut,
    Page,
    RecoverOut,
    ResumeIn,
    ResumeMapIn,
    RunDetailOut,
    RunFilters,
    RunOut,
    StartRunIn,
    StartRunOut,
    SteeringIn,
    SteeringOut,
    TargetedResumeIn,
)
from forgeui.models import AuditEntry, Interrupt, Run, Thread
from forgeui.runs import bulk, registry, services
from forgeui.runs.exceptions import (
    AlreadyClaimed,
    Forbidden,
    GraphUnavailable,
    InvalidRequest,
    NotFound,
    StaleAnswer,
    ThreadTaken,
    UnknownGraph,
)
from forgeui.store import DjangoCheckpointStore
from forgeui.store.pages import ThreadPages
from forgeui.team import assignment
from runtime.errors import AmbiguousResume, CheckpointConflict, ResumeError, StaleResumeTarget

logger = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})

DESCRIPTION = f"""
Authenticate with `Authorization: Bearer <token>` (`manage.py create_token USERNAME`, or
the admin) or a browser session (unsafe methods then need the `X-CSRFToken` header).

Limits: request bodies up to {MAX_BODY_BYTES} bytes (413 beyond); UTF-8 JSON only, nested
at most {MAX_DEPTH} levels, no NaN/Infinity, integers within ±(2**53-1), no NUL
characters (422). Unknown body fields are refused (422). Lists answer
`{{"items": [...], "count": N}}` and take `limit` (≤ 200) and `offset`.
"""

class AnyPathConverter:
    """Like Django's ``path`` converter, newlines included: ids are opaque to the URL."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyPathConverter, "anypath")

api = NinjaAPI(title="forge", version="1", description=DESCRIPTION, auth=api_auth,
               parser=StrictJSONParser(), urls_namespace="api",
               docs_decorator=login_required_for_docs)
router = Router(tags=["forge"])
CONFLICT = {409: ConflictOut}


# -- reading -----------------------------------------------------------------------------


@router.get("/health", auth=None, response={200: dict[str, str]}, tags=["meta"])
def health(request: HttpRequest) -> dict[str, str]:
    """Liveness probe; the only anonymous route."""
    return {"status": "ok"}


@router.get("/graphs", response={200: GraphList, **ERRORS})
def list_graphs(request: HttpRequest) -> dict[str, Any]:
    names = registry.graph_names()
    return {"items": names, "count": len(names)}


@router.get("/runs", response={200: list[RunOut], **ERRORS})
@paginate(Page)
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> Any:
    """Newest first."""
    return filters.filter(Run.objects.select_related("started_by", "forked_by")
                          .order_by("-created_at", "run_id"))


@router.get("/runs/{run_id}", response={200: RunDetailOut, **ERRORS})
def get_run(request: HttpRequest, run_id: Id) -> Any:
    """One run, and its whole tree (root first) with each run's pending interrupts."""
    run = _get(Run.objects.select_related("started_by", "forked_by"), "run", run_id)
    pending = (Interrupt.objects.inbox().select_related("answered_by")
               .prefetch_related("approvals__user"))
    tree = Run.objects.of_tree(run.root_thread_id).prefetch_related(
        Prefetch("interrupts", queryset=pending, to_attr="pending"))
    run.tree = sorted(tree, key=lambda r: (r.parent_run_id is not None, len(r.namespace)))
    return run


def checkpoint_bytes(checkpoint: Any) -> int:
    """A checkpoint's size in the list, as its JSON (each one carries its thread so far)."""
    return len(CheckpointOut.from_orm(checkpoint).model_dump_json())


@router.get("/threads/{anypath:thread_id}/checkpoints", response={200: list[CheckpointOut],
                                                                **ERRORS})
@paginate(BytePage, measure=checkpoint_bytes)
def list_checkpoints(request: HttpRequest, thread_id: Id) -> Any:
    """Oldest first, a page at most ``limit`` checkpoints and about 2 MB: ``next`` is the
    URL of the page after. Sub-agent thread ids contain '/'; send them as they are."""
    _get(Thread.objects.filter(deleted=False), "thread", thread_id)
    store = DjangoCheckpointStore()
    return ThreadPages(store.count_sync(thread_id), partial(store.list_sync, thread_id))


@router.get("/checkpoints/{checkpoint_id}", response={200: CheckpointOut, **ERRORS})
def get_checkpoint(request: HttpRequest, checkpoint_id: Id) -> Any:
    found = DjangoCheckpointStore().load_by_id_sync(checkpoint_id)
    if found is None:
        raise Http404(f"no checkpoint {checkpoint_id!r}")
    return found


@router.get("/checkpoints/{checkpoint_id}/state",
            response={200: CheckpointStateOut, **ERRORS})
def get_checkpoint_state(request: HttpRequest, checkpoint_id: Id) -> Any:
    """The state at one checkpoint, without the history that a long thread makes large."""
    return get_checkpoint(request, checkpoint_id)


@router.get("/interrupts", response={200: list[InterruptOut], **ERRORS})
@paginate(Page)
def list_interrupts(request: HttpRequest, filters: Query[InterruptFilters]) -> Any:
    """Oldest first; ``status=pending`` is the inbox; ``tab`` is relative to the caller."""
    found = (Interrupt.objects.select_related("run", "answered_by", "claimed_by")
             .prefetch_related("approvals__user"))
    return filters.apply(found, assignment.Viewer.of(request.auth))


# Before /interrupts/{interrupt_id}: Django would match that path first and answer 405.
@router.post("/interrupts/bulk_resume", response={200: BulkResultOut, **BODY_ERRORS})
def bulk_resume(request: HttpRequest, body: BulkResumeIn) -> Any:
    """One answer for many interrupts, each with its own compare-and-set; every id's
    outcome (accepted, stale with who answered, forbidden, ...) is reported. A ``false``
    is not given to a breakpoint (``not_settled``): it would not stop the node there."""
    viewer = assignment.Viewer.of(request.auth)
    ids = body.ids if body.filter is None else body.filter.interrupt_ids(
        Interrupt.objects.all(), viewer, bulk.MAX_BULK)
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


@router.get("/interrupts/{interrupt_id}", response={200: InterruptOut, **ERRORS})
def get_interrupt(request: HttpRequest, interrupt_id: Id) -> Any:
    return _get(Interrupt.objects.select_related("run", "answered_by", "claimed_by")
                .prefetch_related("approvals__user"),
                "interrupt", interrupt_id)


@router.get("/audit", response={200: list[AuditOut], **ERRORS})
@paginate(Page)
def list_audit(request: HttpRequest, filters: Query[AuditFilters]) -> Any:
    """Newest first."""
    return filters.apply(AuditEntry.objects.newest_first())


# -- acting ------------------------------------------------------------------------------


@router.post("/runs", response={201: StartRunOut, **BODY_ERRORS, **CONFLICT})
def start_run(request: HttpRequest, body: StartRunIn) -> Any:
    """Start a registered graph (supervisor); it runs in a task."""
    started = services.start_run(request.auth, body.graph, body.input, body.thread_id)
    return Status(201, started)


@router.post("/interrupts/{interrupt_id}/resume",
             response={202: AcceptedOut, **BODY_ERRORS, **CONFLICT})
def resume_interrupt(request: HttpRequest, interrupt_id: Id, body: ResumeIn) -> Any:
    """Answer one interrupt: 202 once recorded; 409 if someone answered first."""
    answer = services.answer_interrupt(
        request.auth, interrupt_id, body.value, steering=body.steering,
        expected_checkpoint_id=body.expected_checkpoint_id, child_policy=body.child_policy)
    return Status(202, answer)


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


@router.post("/threads/{anypath:thread_id}/fork",
             response={201: ForkOut, **BODY_ERRORS, **CONFLICT})
def fork_thread(request: HttpRequest, thread_id: Id, body: ForkIn) -> Any:
    """Copy a root thread as of a checkpoint (default: latest) into a new thread,
    optionally with a paused node's input edited or an answer pre-filled."""
    new_thread = services.fork_thread(request.auth, thread_id, body.checkpoint_id,
                                      inputs=body.inputs, answers=body.answers)
    return Status(201, {"thread_id": new_thread})


@router.post("/steering", response={201: SteeringOut, **BODY_ERRORS, **CONFLICT})
def add_steering(request: HttpRequest, body: SteeringIn) -> Any:
    """A note for one run (or task), stored apart from any answer."""
    note = services.add_steering_note(request.auth, body.run_id, body.text,
                                      task_id=body.task_id, interrupt_id=body.interrupt_id)
    return Status(201, note)


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


@router.api_operation(["GET", "POST", "PUT", "PATCH", "DELETE"], "/{anypath:rest}",
                      include_in_schema=False, auth=None)
def not_found(request: HttpRequest, rest: str) -> Any:
    """Unknown paths under /api/ answer JSON, like every other error here."""
    raise NotFound(f"no API route /api/{rest}")


def _get(queryset: Any, what: str, pk: str) -> Any:
    found = queryset.filter(pk=pk).first()
    if found is None:
        raise NotFound(f"no {what} {pk!r}")
    return found


api.add_router("", agent_requests.router)  # before the catch-all route in ``router``
api.add_router("", router)


# -- errors: mapped to HTTP once -----------------------------------------------------------


def _json(request: HttpRequest, status: int, data: dict[str, Any],
          audited: bool = False) -> HttpResponse:
    """An error response; a refused change by a known user also leaves an audit row, unless
    ``audited`` (it has one already, or the body itself was refused: no change was tried,
    and malformed bodies in a loop must not fill the log)."""
    if not audited and request.method not in SAFE_METHODS and status < 500:
        _audit_refusal(request, status, data)
    return api.create_response(request, data, status=status)


def _audit_refusal(request: HttpRequest, status: int, data: dict[str, Any]) -> None:
    actor = getattr(request, "auth", None) or request.user
    if not getattr(actor, "is_authenticated", False):
        return  # anonymous refusals (401) would only let strangers fill the log
    try:
        AuditEntry.objects.create(
            actor=actor, action="api.refused", object_type="route",
            object_id=request.path[:255],
            detail={"method": request.method, "status": status,
                    "reason": str(data.get("detail"))[:1000]})
    except Exception:  # the refusal stands even if it cannot be recorded
        logger.exception("could not audit a refused %s %s", request.method, request.path)


def _field_errors(request: HttpRequest, errors: list[dict[str, Any]]) -> HttpResponse:
    detail = [{"loc": [str(p) if not isinstance(p, int) else p for p in e.get("loc", [])],
               "msg": str(e.get("msg", "")), "type": str(e.get("type", "value_error"))}
              for e in errors]
    return _json(request, 422, {"detail": detail}, audited=True)  # a refused body


@api.exception_handler(NotFound)
@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _json(request, 404, {"detail": str(exc) or "not found"})


@api.exception_handler(Forbidden)
def _forbidden(request: HttpRequest, exc: Forbidden) -> HttpResponse:
    return _json(request, 403, {"detail": str(exc)}, audited=True)  # by the service


@api.exception_handler(UnknownGraph)
def _unknown_graph(request: HttpRequest, exc: UnknownGraph) -> HttpResponse:
    return _field_errors(request, [{"loc": ["body", "graph"], "msg": str(exc),
                                    "type": "unknown_graph"}])


@api.exception_handler(GraphUnavailable)
def _graph_unavailable(request: HttpRequest, exc: GraphUnavailable) -> HttpResponse:
    """The request was fine; this site's registration of the graph is not (409)."""
    return _conflict(request, str(exc), {}, graph=exc.name)


@api.exception_handler(InvalidRequest)
def _invalid(request: HttpRequest, exc: InvalidRequest) -> HttpResponse:
    loc = getattr(exc, "loc", None) or ["body"]
    return _field_errors(request, [{"loc": loc, "msg": str(exc), "type": "invalid"}])


@api.exception_handler(StaleAnswer)
def _stale_answer(request: HttpRequest, exc: StaleAnswer) -> HttpResponse:
    return _conflict(request, str(exc), exc.latest, audited=True,  # by the service
                     interrupt_id=exc.interrupt_id, status=exc.status,
                     answered_by=exc.answered_by, answered_at=exc.answered_at)


@api.exception_handler(AlreadyClaimed)
def _already_claimed(request: HttpRequest, exc: AlreadyClaimed) -> HttpResponse:
    return _conflict(request, str(exc), {}, interrupt_id=exc.interrupt_id, status="pending",
                     claimed_by=exc.claimed_by)


@api.exception_handler(ThreadTaken)
def _thread_taken(request: HttpRequest, exc: ThreadTaken) -> HttpResponse:
    return _conflict(request, str(exc), {"thread_id": exc.thread_id, "status": exc.status},
                     graph=exc.graph)


@api.exception_handler(StaleResumeTarget)
def _stale_target(request: HttpRequest, exc: StaleResumeTarget) -> HttpResponse:
    return _conflict(request, str(exc), exc.latest)


@api.exception_handler(AmbiguousResume)
def _ambiguous(request: HttpRequest, exc: AmbiguousResume) -> HttpResponse:
    return _conflict(request, str(exc), {"interrupts": [i.id for i in exc.pending]})


@api.exception_handler(ResumeError)
@api.exception_handler(CheckpointConflict)
def _resume_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _conflict(request, str(exc), {})


def _conflict(request: HttpRequest, detail: str, latest: dict[str, Any],
              audited: bool = False, **fields: Any) -> HttpResponse:
    """409 with where things stand now; pending interrupts as ids, whatever the source."""
    pending = [i["id"] if isinstance(i, dict) else str(i) for i in latest.get("interrupts") or []]
    latest = {k: v for k, v in latest.items()
              if k in ("run_id", "thread_id", "root_thread_id", "checkpoint_id", "status")}
    return _json(request, 409, {"detail": detail, **fields,
                                "latest": {**latest, "interrupts": pending}}, audited)


@api.exception_handler(ValidationError)
def _validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return _field_errors(request, exc.errors)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _json(request, 413, {"detail": f"request body over {MAX_BODY_BYTES} bytes"},
                 audited=True)  # a refused body


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    if isinstance(cause, RequestDataTooBig):
        return _too_big(request, cause)
    if isinstance(cause, BodyRefused) and cause.status == 422:
        return _field_errors(request, [{"loc": ["body"], "msg": str(cause),
                                        "type": "json_invalid"}])
    if isinstance(cause, BodyRefused):
        return _json(request, cause.status, {"detail": str(cause)}, audited=True)
    # AuthorizationError comes from the read gate, which audits its own refusals; a CSRF
    # failure is most likely forged by another site and gets no row in the user's name.
    return _json(request, exc.status_code, {"detail": str(exc)},
                 audited=isinstance(exc, AuthorizationError | CsrfFailed))


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Last resort: a bug. Logged with its traceback; the client gets JSON, not a page."""
    logger.exception("unhandled error on %s %s", request.method, request.path)
    return _json(request, 500, {"detail": "internal error; it has been logged"})
