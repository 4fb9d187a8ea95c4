"""The MCP server: ``request_approval`` and ``ask_human`` for any MCP client.

Both tools make an approval request (``forgeui.requests.service``) and wait for it. The
wait is the request's, not the call's: a client that times out and calls again with the
same arguments gets the same request back (the idempotency key is derived from the
agent, the tool and its arguments), and its decision once there is one. A decision older
than ``REATTACH_S`` is not handed to a new call: the same call made later is asked anew.
While waiting the tool sends progress notifications, which clients may use to keep the
call open.

Transports: stdio (``manage.py mcp``, acting as the agent whose token is in
``FORGE_AGENT_TOKEN``) and streamable HTTP at ``/mcp`` (``forgeui.requests.mcp_mount``), in
the SDK's stateless mode: each POST is served on its own, so nothing depends on the ASGI
lifespan that daphne does not run, and any web process can answer any call.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from mcp.server.mcpserver import Context, MCPServer

from forgeui.models import AgentRequest
from forgeui.requests import service
from forgeui.requests.service import Caller, caller_for_token
from forgeui.requests.waiting import waiters

REATTACH_S = 600.0


def build(fixed: Caller | None = None, recheck_s: float | None = None) -> MCPServer:
    """The server; ``fixed`` is stdio's agent, else each call's bearer token is.
    ``recheck_s``: how often a waiting call reads its request without being woken."""
    recheck_s = recheck_s or settings.FORGE_MCP_PROGRESS_SECONDS
    server = MCPServer("forge", instructions="Ask forge's reviewers before acting.")

    async def caller_of(ctx: Context) -> Caller:
        if fixed is not None:
            return fixed
        header = (ctx.headers or {}).get("authorization", "")
        scheme, _, token = header.partition(" ")
        return await sync_to_async(caller_for_token)(token.strip() if scheme.lower() ==
                                                     "bearer" else "")

    @server.tool(description="Ask a person whether to run a tool call. Returns Claude "
                             "Code's permission-prompt JSON: {\"behavior\": \"allow\", "
                             "\"updatedInput\": {...}} or {\"behavior\": \"deny\", "
                             "\"message\": \"...\"}.")
    async def request_approval(tool_name: str, input: dict[str, Any], ctx: Context) -> str:
        caller = await caller_of(ctx)
        body = {"actions": [{"name": tool_name, "args": input}],
                "agent": {"name": caller.agent or caller.user.get_username()}}
        found = await ask_and_wait(caller, body, ctx, recheck_s)
        return json.dumps(permission(found, input))

    @server.tool(description="Ask a person a question and return their answer in words.")
    async def ask_human(question: str, ctx: Context, choices: list[str] | None = None) -> str:
        caller = await caller_of(ctx)
        args: dict[str, Any] = {"question": question, **({"choices": choices} if choices
                                                        else {})}
        body = {"title": question[:300], "actions": [
            {"name": "ask_human", "args": args, "decisions": ["respond"]}],
            "agent": {"name": caller.agent or caller.user.get_username()}}
        if choices:
            body["description"] = "Answer with one of: " + ", ".join(choices)
        found = await ask_and_wait(caller, body, ctx, recheck_s)
        first = (found.get("decisions") or [{}])[0]
        return str(first.get("message") or f"(no answer: the request is {found['status']})")

    return server


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
                       recheck_s: float) -> dict[str, Any]:
    row = await sync_to_async(attach)(caller, body)
    started = time.monotonic()
    while True:
        found = await waiters.until_ended(row.id, lambda: sync_to_async(service.outcome)(row),
                                          settings.FORGE_MCP_PROGRESS_SECONDS, recheck_s)
        if found["status"] != "pending":
            return found
        await ctx.report_progress(round(time.monotonic() - started), None,
                                  f"waiting for a reviewer (request {row.id})")


def attach(caller: Caller, body: dict[str, Any]) -> AgentRequest:
    """The request for this call: the one a repeated call made, unless it ended long ago."""
    key = call_key(caller, body)
    while True:
        made = service.create(caller, {**body, "idempotency_key": key})
        if made.created or not ended_long_ago(made.row):
            return made.row
        key = "mcp-" + hashlib.sha256(f"{key}:{made.row.id}".encode()).hexdigest()[:40]


def call_key(caller: Caller, body: dict[str, Any]) -> str:
    text = json.dumps([caller.agent, body["actions"]], sort_keys=True, default=str)
    return "mcp-" + hashlib.sha256(text.encode()).hexdigest()[:40]


def ended_long_ago(row: AgentRequest) -> bool:
    found = service.outcome(row)
    at = found.get("responded_at")
    if found["status"] == "pending":
        return False
    return at is None or timezone.now() - at > timedelta(seconds=REATTACH_S)
