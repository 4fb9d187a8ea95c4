"""The MCP server: ``request_approval`` and ``ask_human`` for any MCP client.

Both tools make an approval request (``forgeui.requests.service``) and wait for it. Each
call is a request of its own: only the same call, asked again after its client gave up,
finds the request it made, by Claude Code's ``tool_use_id`` (with the same tool and input)
or, within one session (one stdio process, one HTTP session id), by the same MCP request
id and progress token. It gets that request's decision or waits on; one that was
cancelled is asked anew. A call its client abandons (``notifications/cancelled``, a
timeout, a closed connection) withdraws its pending request, so no reviewer decides what
nobody waits for. While waiting the tool sends progress notifications, which clients may
use to keep the call open.

Transports: stdio (``manage.py mcp``, acting as the agent whose token is in
``FORGE_AGENT_TOKEN``) and streamable HTTP at ``/mcp`` (``forgeui.requests.mcp_mount``), in
the SDK's stateless mode: each POST is served on its own, so nothing depends on the ASGI
lifespan that daphne does not run, and any web process can answer any call. Both take
agent tokens only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

import anyio
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from forgeui.models import AgentRequest
from forgeui.requests import limits, service
from forgeui.requests.service import Caller, NotAllowed, agent_for_token
from forgeui.requests.waiting import waiters
from forgeui.runs.exceptions import InvalidRequest

logger = logging.getLogger(__name__)


APPROVAL_TOOL = ("Ask a person whether to run a tool call (Claude Code's permission-prompt "
                 "input: tool_name, input, tool_use_id). Returns {\"behavior\": \"allow\", "
                 "\"updatedInput\": {...}} or {\"behavior\": \"deny\", \"message\": \"...\"}.")
QUESTION_TOOL = "Ask a person a question and return their answer in words."


def build(fixed: Caller | None = None, recheck_s: float | None = None) -> MCPServer:
    """The server; ``fixed`` is stdio's agent, else each call's bearer token is.
    ``recheck_s``: how often a waiting call reads its request without being woken."""
    calls = Calls(fixed, recheck_s or settings.FORGE_MCP_PROGRESS_SECONDS,
                  uuid.uuid4().hex if fixed is not None else None)  # one process, one session
    server = MCPServer("forge", instructions="Ask forge's reviewers before acting.")

    # The SDK reads each tool's input schema from its signature: these spell it out.
    @server.tool(description=APPROVAL_TOOL)
    async def request_approval(tool_name: str, input: dict[str, Any], ctx: Context,
                               tool_use_id: str | None = None) -> str:
        return await calls.request_approval(tool_name, input, ctx, tool_use_id)

    @server.tool(description=QUESTION_TOOL)
    async def ask_human(question: str, ctx: Context, choices: list[str] | None = None) -> str:
        return await calls.ask_human(question, ctx, choices)

    return server


@dataclass(frozen=True)
class Calls:
    """The tools' work for one server: who calls, and what names a call asked again."""

    fixed: Caller | None
    recheck_s: float
    stdio_session: str | None

    async def request_approval(self, tool_name: str, input: dict[str, Any], ctx: Context,
                               tool_use_id: str | None) -> str:
        caller = await self.caller_of(ctx)
        if tool_use_id is not None and not 1 <= len(tool_use_id) <= limits.MAX_NAME:
            raise ToolError(f"tool_use_id has 1 to {limits.MAX_NAME} characters")
        body = {"actions": [{"name": tool_name, "args": input}],
                "agent": {"name": caller.agent or caller.user.get_username()}}
        found = await ask_and_wait(caller, body, ctx, self.recheck_s,
                                   self.same_call(ctx, tool_use_id))
        return json.dumps(permission(found, input))

    async def ask_human(self, question: str, ctx: Context, choices: list[str] | None) -> str:
        caller = await self.caller_of(ctx)
        args: dict[str, Any] = {"question": question, **({"choices": choices} if choices
                                                        else {})}
        body = {"title": question[:300], "actions": [
            {"name": "ask_human", "args": args, "decisions": ["respond"]}],
            "agent": {"name": caller.agent or caller.user.get_username()}}
        if choices:
            body["description"] = "Answer with one of: " + ", ".join(choices)
        found = await ask_and_wait(caller, body, ctx, self.recheck_s, self.same_call(ctx, None))
        first = (found.get("decisions") or [{}])[0]
        return str(first.get("message") or f"(no answer: the request is {found['status']})")

    async def caller_of(self, ctx: Context) -> Caller:
        if self.fixed is not None:
            return self.fixed
        header = (ctx.headers or {}).get("authorization", "")
        scheme, _, token = header.partition(" ")
        try:
            return await sync_to_async(agent_for_token)(
                token.strip() if scheme.lower() == "bearer" else "")
        except NotAllowed as exc:
            raise ToolError(str(exc)) from None

    def same_call(self, ctx: Context, tool_use_id: str | None) -> list[Any] | None:
        """What names this call should its client ask it again, if anything does."""
        if tool_use_id:
            return ["tool_use_id", tool_use_id]
        session = self.stdio_session or (ctx.headers or {}).get("mcp-session-id")
        if not session:  # stateless HTTP: request ids repeat in every session
            return None
        meta = ctx.request_context.meta or {}
        return ["mcp", session, ctx.request_id, meta.get("progress_token")]


def permission(found: dict[str, Any], asked: dict[str, Any]) -> dict[str, Any]:
    """An outcome in Claude Code's permission-prompt format."""
    first = (found.get("decisions") or [{}])[0]
    kind = first.get("type")
    if found["status"] == "decided" and kind in ("approve", "edit"):
        return {"behavior": "allow", "updatedInput": first.get("args") or asked}
    words = first.get("message") or found.get("message")
    who = (found.get("responder") or {}).get("username")
    reason = words or (f"rejected by {who}" if who else f"not approved ({found['status']})")
    return {"behavior": "deny", "message": reason}


async def ask_and_wait(caller: Caller, body: dict[str, Any], ctx: Context,
                       recheck_s: float, call: list[Any] | None) -> dict[str, Any]:
    """The request's outcome once it has one; abandoned before that, it is withdrawn."""
    try:
        row = await sync_to_async(attach)(caller, body, call)
    except InvalidRequest as exc:
        raise ToolError(str(exc)) from None
    started = time.monotonic()
    found: dict[str, Any] = {"status": "pending"}
    try:
        while True:
            found = await waiters.until_ended(
                row.id, lambda: sync_to_async(service.outcome)(row),
                settings.FORGE_MCP_PROGRESS_SECONDS, recheck_s)
            if found["status"] != "pending":
                return found
            await ctx.report_progress(round(time.monotonic() - started), None,
                                      f"waiting for a reviewer (request {row.id})")
    finally:
        if found["status"] == "pending":
            await withdraw(caller, row.id)


async def withdraw(caller: Caller, request_id: str) -> None:
    """Cancel a request whose call was abandoned, even while the call is being cancelled."""
    with anyio.CancelScope(shield=True):
        try:
            await sync_to_async(service.withdraw)(caller, request_id)
        except Exception:  # the call is over either way; the row stays for a reviewer
            logger.exception("could not withdraw request %s", request_id)


def attach(caller: Caller, body: dict[str, Any], call: list[Any] | None) -> AgentRequest:
    """A new request, or the one this same call made before unless that was cancelled."""
    if call is None:
        return service.create(caller, body).row
    key = call_key(caller, body, call)
    while True:
        made = service.create(caller, {**body, "idempotency_key": key})
        if made.created or service.outcome(made.row)["status"] != "cancelled":
            return made.row
        key = "mcp-" + hashlib.sha256(f"{key}:{made.row.id}".encode()).hexdigest()[:40]


def call_key(caller: Caller, body: dict[str, Any], call: list[Any]) -> str:
    text = json.dumps([caller.agent, call, body["actions"]], sort_keys=True, default=str)
    return "mcp-" + hashlib.sha256(text.encode()).hexdigest()[:40]
