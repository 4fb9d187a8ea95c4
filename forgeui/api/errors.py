"""Every refusal mapped to HTTP once, here, by ``install``.

The dashboard's errors (``forgeui.runs.exceptions``), the runtime's (``runtime.errors``),
ninja's and Django's each get a ``Reply``: a status and a JSON body. Nothing reaches the
client as a 500 page; the catch-all handler logs and answers JSON, and the test suite
asserts it never fires. A refused change by a known user also leaves an audit row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthorizationError, HttpError, ValidationError

from forgeui.api.auth import CsrfFailed
from forgeui.api.parser import MAX_BODY_BYTES, BodyRefused
from forgeui.models import AuditEntry
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
from runtime.errors import AmbiguousResume, CheckpointConflict, ResumeError, StaleResumeTarget

logger = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


@dataclass(frozen=True, slots=True)
class Reply:
    """An error response. ``audited``: it needs no audit row (it has one already, or the
    body itself was refused: no change was tried, and malformed bodies in a loop must not
    fill the log)."""

    status: int
    body: dict[str, Any]
    audited: bool = False


Handler = Callable[[HttpRequest, Any], Reply]


def install(api: NinjaAPI) -> None:
    """Answer every error ``api`` meets with its ``Reply``, audited where it should be."""
    for kinds, handler in HANDLERS:
        for kind in kinds:
            api.add_exception_handler(kind, partial(_respond, api, handler))


def _respond(api: NinjaAPI, handler: Handler, request: HttpRequest,
             exc: Exception) -> HttpResponse:
    reply = handler(request, exc)
    if not reply.audited and request.method not in SAFE_METHODS and reply.status < 500:
        _audit_refusal(request, reply.status, reply.body)
    return api.create_response(request, reply.body, status=reply.status)


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


def _field_errors(errors: list[dict[str, Any]]) -> Reply:
    detail = [{"loc": [str(p) if not isinstance(p, int) else p for p in e.get("loc", [])],
               "msg": str(e.get("msg", "")), "type": str(e.get("type", "value_error"))}
              for e in errors]
    return Reply(422, {"detail": detail}, audited=True)  # a refused body


def _conflict(detail: str, latest: dict[str, Any], audited: bool = False,
              **fields: Any) -> Reply:
    """409 with where things stand now; pending interrupts as ids, whatever the source."""
    pending = [i["id"] if isinstance(i, dict) else str(i) for i in latest.get("interrupts") or []]
    latest = {k: v for k, v in latest.items()
              if k in ("run_id", "thread_id", "root_thread_id", "checkpoint_id", "status")}
    return Reply(409, {"detail": detail, **fields,
                       "latest": {**latest, "interrupts": pending}}, audited)


def _not_found(request: HttpRequest, exc: Exception) -> Reply:
    return Reply(404, {"detail": str(exc) or "not found"})


def _forbidden(request: HttpRequest, exc: Forbidden) -> Reply:
    return Reply(403, {"detail": str(exc)}, audited=True)  # by the service


def _unknown_graph(request: HttpRequest, exc: UnknownGraph) -> Reply:
    return _field_errors([{"loc": ["body", "graph"], "msg": str(exc),
                           "type": "unknown_graph"}])


def _graph_unavailable(request: HttpRequest, exc: GraphUnavailable) -> Reply:
    """The request was fine; this site's registration of the graph is not (409)."""
    return _conflict(str(exc), {}, graph=exc.name)


def _invalid(request: HttpRequest, exc: InvalidRequest) -> Reply:
    loc = getattr(exc, "loc", None) or ["body"]
    return _field_errors([{"loc": loc, "msg": str(exc), "type": "invalid"}])


def _stale_answer(request: HttpRequest, exc: StaleAnswer) -> Reply:
    return _conflict(str(exc), exc.latest, audited=True,  # by the service
                     interrupt_id=exc.interrupt_id, status=exc.status,
                     answered_by=exc.answered_by, answered_at=exc.answered_at)


def _already_claimed(request: HttpRequest, exc: AlreadyClaimed) -> Reply:
    return _conflict(str(exc), {}, interrupt_id=exc.interrupt_id, status="pending",
                     claimed_by=exc.claimed_by)


def _thread_taken(request: HttpRequest, exc: ThreadTaken) -> Reply:
    return _conflict(str(exc), {"thread_id": exc.thread_id, "status": exc.status},
                     graph=exc.graph)


def _stale_target(request: HttpRequest, exc: StaleResumeTarget) -> Reply:
    return _conflict(str(exc), exc.latest)


def _ambiguous(request: HttpRequest, exc: AmbiguousResume) -> Reply:
    return _conflict(str(exc), {"interrupts": [i.id for i in exc.pending]})


def _resume_error(request: HttpRequest, exc: Exception) -> Reply:
    return _conflict(str(exc), {})


def _validation(request: HttpRequest, exc: ValidationError) -> Reply:
    return _field_errors(exc.errors)


def _too_big(request: HttpRequest, exc: Exception) -> Reply:
    return Reply(413, {"detail": f"request body over {MAX_BODY_BYTES} bytes"},
                 audited=True)  # a refused body


def _http_error(request: HttpRequest, exc: HttpError) -> Reply:
    cause = exc.__cause__
    if isinstance(cause, RequestDataTooBig):
        return _too_big(request, cause)
    if isinstance(cause, BodyRefused) and cause.status == 422:
        return _field_errors([{"loc": ["body"], "msg": str(cause), "type": "json_invalid"}])
    if isinstance(cause, BodyRefused):
        return Reply(cause.status, {"detail": str(cause)}, audited=True)
    # AuthorizationError comes from the read gate, which audits its own refusals; a CSRF
    # failure is most likely forged by another site and gets no row in the user's name.
    return Reply(exc.status_code, {"detail": str(exc)},
                 audited=isinstance(exc, AuthorizationError | CsrfFailed))


def _unexpected(request: HttpRequest, exc: Exception) -> Reply:
    """Last resort: a bug. Logged with its traceback; the client gets JSON, not a page."""
    logger.exception("unhandled error on %s %s", request.method, request.path)
    return Reply(500, {"detail": "internal error; it has been logged"})


HANDLERS: list[tuple[tuple[type[Exception], ...], Handler]] = [
    ((NotFound, Http404), _not_found),
    ((Forbidden,), _forbidden),
    ((UnknownGraph,), _unknown_graph),
    ((GraphUnavailable,), _graph_unavailable),
    ((InvalidRequest,), _invalid),
    ((StaleAnswer,), _stale_answer),
    ((AlreadyClaimed,), _already_claimed),
    ((ThreadTaken,), _thread_taken),
    ((StaleResumeTarget,), _stale_target),
    ((AmbiguousResume,), _ambiguous),
    ((ResumeError, CheckpointConflict), _resume_error),
    ((ValidationError,), _validation),
    ((RequestDataTooBig,), _too_big),
    ((HttpError,), _http_error),
    ((Exception,), _unexpected),
]
