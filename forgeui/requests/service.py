"""Approval requests: create one (or find the same one again), read it, decide it.

A request is created by starting its run at once, in the caller's request: when the 201
is sent the interrupt is already in every inbox, and a restart cannot lose a queued start.
Its outcome is read from the interrupt and its answer, so a decision made anywhere (the
API, the inbox page, a bulk answer, the deadline sweep) is the request's decision.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction

from forgeui.models import (
    AgentRequest,
    ApiToken,
    Interrupt,
    InterruptStatus,
    Run,
    RunStatus,
    Webhook,
)
from forgeui.notifications import egress
from forgeui.notifications.callbacks import ended_status
from forgeui.permissions import teams
from forgeui.permissions.roles import Action, allowed
from forgeui.requests import limits, shapes
from forgeui.requests.graph import GRAPH
from forgeui.runs import registry, services, tasks
from forgeui.runs.exceptions import InvalidRequest, NotFound
from forgeui.runs.policies import approvals
from forgeui.team import sensitive
from runtime import RunResult


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: a person with a forge role, or an agent (``agent`` is its name)."""

    user: Any
    agent: str = ""


class NotAllowed(PermissionError):
    """No agent token (nor a person's token with a forge role) came with the call."""


class NotAnAgent(NotAllowed):
    """A person's token where only an agent's is taken."""


def caller_for_token(token: str) -> Caller:
    """The agent, or the person with a forge role, that ``token`` belongs to."""
    found = ApiToken.objects.authenticate(token) if token else None
    if found is None:
        raise NotAllowed("send an agent token: Authorization: Bearer <token>")
    if found.agent:
        return Caller(found.user, found.agent)
    if not allowed(found.user, Action.READ):
        raise NotAllowed("this token's user has no forge role")
    return Caller(found.user)


def agent_for_token(token: str) -> Caller:
    """The agent ``token`` names; a person's token is refused (MCP is for agents)."""
    found = ApiToken.objects.authenticate(token) if token else None
    if found is None:
        raise NotAllowed("send an agent token: Authorization: Bearer <token>")
    if not found.agent:
        raise NotAnAgent("this is a person's token; MCP takes an agent token "
                         "(manage.py create_token --agent NAME)")
    return Caller(found.user, found.agent)


@dataclass(frozen=True, slots=True)
class Created:
    row: AgentRequest
    created: bool
    callback_secret: str = ""


def create(caller: Caller, body: dict[str, Any]) -> Created:
    """Start a request's run; with a known ``idempotency_key`` return that request."""
    key = _stored_key(caller, body.get("idempotency_key") or "")
    if key and (found := _same(caller, key)) is not None:
        return Created(found, created=False)
    run_input, on_deadline = _run_input(caller, body)
    secret = secrets.token_urlsafe(24) if body.get("callback_url") else ""
    agent = body.get("agent") or {}
    try:
        with transaction.atomic():
            row = AgentRequest.objects.create(
                id=uuid.uuid4().hex, owner=caller.user, idempotency_key=key,
                agent=(agent.get("name") or caller.agent or caller.user.get_username())[:200],
                token_agent=caller.agent[:200], team=teams.team_of_agent(caller.agent),
                session=(agent.get("session") or "")[:300],
                callback=_callback(body.get("callback_url"), secret))
    except IntegrityError:  # the same key, sent twice at once: the first one won
        if key and (found := _same(caller, key)) is not None:
            return Created(found, created=False)
        raise
    started = _start(row, caller, run_input)
    # Audited once its run exists: a request refused on the way is no request.
    services.audit(caller.user, "request.create", object_type="request", object_id=row.id,
                   thread_id=row.id, run_id=row.id, team=row.team,
                   detail={"agent": row.agent, "on_deadline": on_deadline,
                           "idempotency_key": body.get("idempotency_key") or ""})
    tasks.auto_decide(started)  # a policy's rule may approve it before anyone looks
    return Created(row, created=True, callback_secret=secret)


def _stored_key(caller: Caller, key: str) -> str:
    """An agent's keys are its own, apart from its user's and the user's other agents'
    (an agent token may belong to a person)."""
    if not key or not caller.agent:
        return key
    text = json.dumps([caller.agent, key])
    return "agent-" + hashlib.sha256(text.encode()).hexdigest()[:40]


def _same(caller: Caller, key: str) -> AgentRequest | None:
    return AgentRequest.objects.filter(owner=caller.user, token_agent=caller.agent[:200],
                                       idempotency_key=key).first()


def _run_input(caller: Caller, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    limits.check(body)
    actions = body["actions"]
    shapes.check_actions(actions)
    if body.get("callback_url"):
        check_callback(body["callback_url"])
    on_deadline = body.get("on_deadline") or "reject"
    if on_deadline == "approve" and not may_default_to_approve(caller):
        raise InvalidRequest("on_deadline 'approve' is not allowed for this agent "
                             "(FORGE_REQUESTS_APPROVE_ON_DEADLINE)", ["body", "on_deadline"])
    control: dict[str, Any] = {"assignees": _assignees(body.get("assignee"))}
    if keys := shapes.sensitive_keys(actions):
        control["sensitive"] = keys
    if body.get("deadline_s") is not None:
        control.update(deadline_s=body["deadline_s"],
                       default=shapes.default_for(actions, on_deadline))
    return {"payload": payload(caller, body), "control": control}, on_deadline


def may_default_to_approve(caller: Caller) -> bool:
    names = settings.FORGE_REQUESTS_APPROVE_ON_DEADLINE
    return "*" in names or (caller.agent or caller.user.get_username()) in names


def payload(caller: Caller, body: dict[str, Any]) -> dict[str, Any]:
    """What the inbox shows, and the schema every answer must fit."""
    actions = body["actions"]
    agent = body.get("agent") or {}
    names = ", ".join(a["name"] for a in actions)
    found = {"title": body.get("title") or f"Approve {names}?",
             "description": body.get("description") or "",
             "agent": {"name": agent.get("name") or caller.agent
                       or caller.user.get_username(),
                       "session": agent.get("session") or ""},
             "calls": actions, "answer_schema": shapes.answer_schema(actions)}
    if body.get("meta") is not None:
        found["meta"] = body["meta"]
    return found


def _assignees(assignee: str | None) -> dict[str, list[str]] | None:
    """``"name"`` names a user, ``"group:name"`` a group."""
    if not assignee:
        return None
    kind, _, name = assignee.partition(":")
    return {"users": [], "groups": [name]} if kind == "group" and name else \
        {"users": [assignee], "groups": []}


def check_callback(url: str) -> None:
    """Refuse a callback forge would not post to: not http(s), or inside the network."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("callback_url must be an http or https URL with a host",
                             ["body", "callback_url"])
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        egress.resolve(parts.hostname, port, settings.FORGE_WEBHOOK_ALLOW_PRIVATE)
    except (egress.RefusedDestination, ValueError) as exc:
        raise InvalidRequest(f"callback_url refused: {exc}", ["body", "callback_url"]) from None


def _callback(url: str | None, secret: str) -> Webhook | None:
    if not url:
        return None
    return Webhook.objects.create(name="request callback"[:100], url=url, secret=secret,
                                  events=[], active=False)


def _start(row: AgentRequest, caller: Caller, run_input: dict[str, Any]) -> RunResult:
    metadata = {"started_by": getattr(caller.user, "pk", None), "request_id": row.id,
                "registered_as": GRAPH}
    try:
        return registry.get_executor(GRAPH).run_sync(run_input, thread_id=row.id,
                                                      metadata=metadata, run_id=row.id)
    except BaseException:
        AgentRequest.objects.filter(pk=row.id).delete()  # no request without its run
        raise


# -- reading -------------------------------------------------------------------------------


def find(caller: Caller, request_id: str) -> AgentRequest:
    """The request, if the caller may read it; ``NotFound`` otherwise (agents see only
    their own, and may not learn that others' exist)."""
    row = AgentRequest.objects.visible_to(caller.user, caller.agent).filter(
        pk=request_id).first()
    if row is None:
        raise NotFound(f"no request {request_id!r}")
    return row


def interrupt_of(request_id: str) -> Interrupt | None:
    return (Interrupt.objects.filter(root_thread_id=request_id)
            .select_related("answered_by", "run").order_by("created_at").first())


def outcome(row: AgentRequest) -> dict[str, Any]:
    """``{status, decisions?, message?, responder?, responded_at?}``, from the database."""
    interrupt = interrupt_of(row.id)
    if interrupt is None:
        cancelled = Run.objects.filter(pk=row.id, status=RunStatus.CANCELLED).exists()
        return {"status": "cancelled" if cancelled else "pending"}
    if interrupt.status == InterruptStatus.PENDING:
        found: dict[str, Any] = {"status": "pending", "interrupt_id": interrupt.pk}
        if (policy := approvals.policy_for(interrupt)) is not None:
            found["approvals"] = approvals.tally(policy, interrupt).text()
        return found
    if interrupt.status == InterruptStatus.CANCELLED:
        return {"status": "cancelled", "interrupt_id": interrupt.pk}
    answer = interrupt.answers.order_by("-id").first()
    value = answer.value if answer is not None and isinstance(answer.value, dict) else {}
    by = interrupt.answered_by
    meta = answer.meta if answer is not None else {}
    found = {"status": ended_status(interrupt, answer), "interrupt_id": interrupt.pk,
             "decisions": value.get("decisions") or [], "message": value.get("message"),
             "responder": None if by is None else {"username": by.get_username(),
                                                   "name": by.get_full_name()},
             "responded_at": interrupt.answered_at}
    if meta.get("policy"):  # who approved, and whether a person or the policy's rule decided
        found["policy"] = meta
    return found


def describe(row: AgentRequest, caller: Caller | None = None) -> dict[str, Any]:
    """The request as the API shows it: what was asked, and where it stands. Sensitive
    args are whole for the agent that asked and for who may answer, else masked."""
    interrupt = interrupt_of(row.id)
    asked = shown_to(caller, interrupt) if interrupt is not None else {}
    return {"id": row.id, "agent": {"name": row.agent, "session": row.session},
            "title": asked.get("title"), "actions": asked.get("calls") or [],
            "created_at": row.created_at, **outcome(row)}


def shown_to(caller: Caller | None, interrupt: Interrupt) -> Any:
    """The request's payload as ``caller`` may see it (masked when nobody is named)."""
    if caller is None:
        return sensitive.masked_payload(interrupt)
    if caller.agent:  # only ever its own request: what it sent, it may read back
        return interrupt.payload
    return sensitive.payload_for(caller.user, interrupt)


# -- deciding ------------------------------------------------------------------------------


def decide(user: Any, request_id: str, decisions: list[dict[str, Any]],
           message: str | None = None) -> dict[str, Any]:
    """A reviewer's decisions, one per action, recorded as the interrupt's answer.

    Raises ``DecisionsRefused`` (every field that does not fit), ``Forbidden`` and
    ``StaleAnswer`` (409 with who decided when) as ``answer_interrupt`` does.
    """
    row = find(Caller(user), request_id)
    services.require_role(user, Action.ANSWER, row.team, object_type="request",
                          object_id=request_id, run_id=row.id, thread_id=row.id)
    interrupt = interrupt_of(row.id)
    if interrupt is None:
        raise NotFound(f"request {request_id!r} has no interrupt (it was cancelled)")
    shapes.check_decisions(interrupt.payload.get("calls") or [], decisions)
    value: dict[str, Any] = {"decisions": decisions}
    if message:
        value["message"] = message
    services.answer_interrupt(user, interrupt.pk, value)
    return outcome(row)


def withdraw(caller: Caller, request_id: str) -> bool:
    """Cancel the caller's own request while it is pending (its client stopped waiting);
    False when it had already ended."""
    row = find(caller, request_id)
    if outcome(row)["status"] != "pending":
        return False
    with transaction.atomic():
        services.audit(caller.user, "request.withdraw", object_type="request",
                       object_id=row.id, thread_id=row.id, run_id=row.id, team=row.team,
                       detail={"agent": row.agent})
        services.enqueue_on_commit(tasks.cancel_run_task, row.id)
    return True


def may_ask(caller: Caller) -> bool:
    return bool(caller.agent) or allowed(caller.user, Action.READ)
