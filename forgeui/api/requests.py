"""``/api/requests``: approval requests from any agent (``forgeui.requests``).

Agent tokens (``create_token --agent NAME``) reach only these routes: they create
requests and read their own. Deciding is a reviewer's: the decision route takes the
API's usual authentication, which refuses agent tokens (403).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from ninja.security import HttpBearer
from pydantic import StringConstraints

from forgeui.api.auth import SessionAuth, may_read
from forgeui.api.schemas import BODY_ERRORS, ERRORS, Body, ConflictOut, Id
from forgeui.models import AgentRequest, ApiToken
from forgeui.requests import limits, service, shapes
from forgeui.requests.service import Caller
from forgeui.requests.waiting import waiters

Name = Annotated[str, StringConstraints(min_length=1, max_length=limits.MAX_NAME)]
Decision = Literal["approve", "edit", "reject", "respond"]
MAX_WAIT_S = 60


class AgentBearer(HttpBearer):
    """Any active token: an agent's (``Caller.agent`` set) or a person's with a role."""

    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        found = ApiToken.objects.authenticate(token.strip()) if token.strip() else None
        if found is None:
            return None
        request.user = found.user
        if found.agent:
            return Caller(found.user, found.agent)
        return Caller(may_read(request, found.user))


class PersonSession(SessionAuth):
    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        user = super().authenticate(request, key)
        return None if user is None else Caller(user)


asking = [AgentBearer(), PersonSession()]
router = Router(tags=["requests"])


class ActionIn(Body):
    name: Name
    args: Any = Field(None, description="the proposed call's arguments")
    description: str | None = Field(None, max_length=10_000)
    decisions: list[str] | None = Field(None, description="any of approve, edit, reject, "
                                                          "respond (default: all four)")
    args_schema: dict[str, Any] | None = Field(None, description=(
        "JSON Schema an edit's args must match; formats are checked, patterns run on RE2 "
        "(no backreferences or lookaround), $ref stays inside it and is never recursive"))
    sensitive: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] | None \
        = Field(None, max_length=shapes.MAX_SENSITIVE, description=(
            "names of args (keys at any depth) shown whole only to those who may answer; "
            "masked in lists, exports, e-mail and webhooks, and for auditors"))


class AgentIn(Body):
    name: Annotated[str, StringConstraints(max_length=200)] | None = None
    session: Annotated[str, StringConstraints(max_length=300)] | None = None


class RequestIn(Body):
    actions: list[ActionIn] = Field(..., min_length=1, max_length=limits.MAX_ACTIONS)
    title: Annotated[str, StringConstraints(max_length=300)] | None = None
    description: str | None = Field(None, description="markdown, rendered safely")
    agent: AgentIn | None = None
    assignee: Annotated[str, StringConstraints(max_length=200)] | None = Field(
        None, description="a username, or group:NAME")
    deadline_s: float | None = Field(None, gt=0, le=365 * 86400)
    on_deadline: Literal["reject", "approve"] | None = Field(
        None, description="the answer a deadline gives (reject unless the server allows "
                          "approve for this agent)")
    idempotency_key: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None \
        = Field(None, description="the same key from the same agent: the same request")
    callback_url: Annotated[str, StringConstraints(max_length=1000)] | None = None
    meta: dict[str, Any] | None = None


class DecisionIn(Body):
    type: Decision
    args: Any = None
    message: str | None = Field(None, max_length=10_000)


class DecideIn(Body):
    decisions: list[DecisionIn] = Field(..., min_length=1, max_length=50)
    message: str | None = Field(None, max_length=10_000)


class AgentOut(Schema):
    name: str
    session: str


class ResponderOut(Schema):
    username: str
    name: str = ""


class DecisionOut(Schema):
    type: str
    args: Any = None
    message: str | None = None


class RequestOut(Schema):
    id: str
    status: Literal["pending", "decided", "expired", "cancelled"]
    agent: AgentOut | None = None
    title: str | None = None
    actions: list[dict[str, Any]] = []
    interrupt_id: str | None = None
    created_at: datetime | None = None
    decisions: list[DecisionOut] = []
    message: str | None = None
    responder: ResponderOut | None = None
    responded_at: datetime | None = None
    approvals: str | None = Field(None, description="under an approval policy: how far it "
                                  "has come, e.g. \"1 of 2 approvals: alice; waiting for "
                                  "one more from finance\"")
    policy: dict[str, Any] | None = Field(None, description="once decided under a policy: "
                                          "which, who approved, or the rule that did")
    callback_secret: str | None = Field(None, description="key of the callback's "
                                                          "X-Forge-Signature (shown once)")


class FieldErrorsOut(Schema):
    detail: list[dict[str, Any]]


@router.post("/requests", auth=asking,
             response={200: RequestOut, 201: RequestOut, **BODY_ERRORS})
def create_request(request: HttpRequest, body: RequestIn) -> Any:
    """Ask reviewers about one or more proposed tool calls: 201, or 200 with the request
    an earlier call with the same ``idempotency_key`` made."""
    caller: Caller = request.auth  # type: ignore[attr-defined]
    made = service.create(caller, body.model_dump(exclude_none=True))
    found = service.describe(made.row, caller)
    if made.callback_secret:
        found["callback_secret"] = made.callback_secret
    return Status(201 if made.created else 200, found)


@router.get("/requests/{request_id}", auth=asking, response={200: RequestOut, **ERRORS})
async def get_request(request: HttpRequest, request_id: Id,
                      wait: Annotated[int, Query(ge=0, le=MAX_WAIT_S)] = 0) -> Any:
    """Where a request stands; with ``wait=N`` (≤ 60 s) answer as soon as it is decided,
    expired or cancelled, else after N seconds with ``status: pending``. (With a bearer
    token, a long poll is answered by ``forgeui.api.longpoll`` before reaching here.)"""
    caller: Caller = request.auth  # type: ignore[attr-defined]
    row = await sync_to_async(service.find)(caller, request_id)
    return await wait_for(caller, row, wait, sync_to_async)


async def wait_for(caller: Caller, row: AgentRequest, wait: int,
                   off_loop: Callable[..., Callable[..., Awaitable[Any]]]) -> dict[str, Any]:
    """The request as ``caller`` may see it, once it has ended or ``wait`` seconds have
    passed."""
    return await waiters.until_ended(row.id, lambda: off_loop(service.describe)(row, caller),
                                     wait)


@router.post("/requests/{request_id}/decision",
             response={200: RequestOut, 422: FieldErrorsOut, **BODY_ERRORS,
                       409: ConflictOut})
def decide_request(request: HttpRequest, request_id: Id, body: DecideIn) -> Any:
    """A reviewer's decisions, one per action; 409 (who decided when) once decided."""
    decisions = [d.model_dump(exclude_none=True) for d in body.decisions]
    try:
        service.decide(request.auth, request_id, decisions, body.message)
    except shapes.DecisionsRefused as refused:
        return Status(422, {"detail": refused.errors})
    caller = Caller(request.auth)
    return service.describe(service.find(caller, request_id), caller)


