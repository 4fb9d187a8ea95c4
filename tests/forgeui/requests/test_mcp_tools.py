"""The MCP tools in process, through the official SDK's client: each call is a request of
its own unless it is the same call asked again; a call the client abandons withdraws its
request; the API's limits hold; a reviewer's words are never an allow."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import override_settings
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from forgeui.api import parser
from forgeui.models import AgentRequest, ApiToken, AuditEntry, Interrupt
from forgeui.requests import limits, mcp_server, service
from forgeui.requests.service import Caller

pytestmark = pytest.mark.django_db(transaction=True)
CALL = {"tool_name": "Bash", "input": {"command": "rm -rf build"}}


@pytest.fixture(autouse=True)
def quick_progress() -> Iterator[None]:
    with override_settings(FORGE_MCP_PROGRESS_SECONDS=0.2):
        yield


@pytest.fixture
def bot(users: dict[str, User]) -> Caller:
    """An agent as ``create_token --agent`` makes it."""
    user = User.objects.create_user("agent:bot")
    token = ApiToken.objects.issue(user, name="tests", agent="bot")[1]
    return service.agent_for_token(token)


def server(bot: Caller) -> MCPServer:
    """A stdio session's server (one per ``manage.py mcp`` process)."""
    return mcp_server.build(fixed=bot, recheck_s=0.1)


async def call(srv: MCPServer, tool: str, args: dict[str, Any], **options: Any) -> Any:
    async with Client(srv, mode="legacy") as client:
        return await client.call_tool(tool, args, **options)


async def pending() -> list[Interrupt]:
    return await sync_to_async(lambda: list(Interrupt.objects.pending()))()


async def pending_soon(count: int = 1) -> list[Interrupt]:
    for _ in range(200):
        if len(found := await pending()) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} pending interrupts")


async def decide(reviewer: User, decisions: list[dict[str, Any]]) -> None:
    [row] = await pending_soon()
    await sync_to_async(service.decide)(reviewer, row.root_thread_id, decisions)


async def decided(srv: MCPServer, reviewer: User, args: dict[str, Any],
                  decisions: list[dict[str, Any]], tool: str = "request_approval") -> str:
    """The tool's text once the reviewer has decided its one pending request."""
    waiting = asyncio.create_task(call(srv, tool, args))
    await decide(reviewer, decisions)
    return str((await waiting).content[0].text)


def requests_made() -> int:
    return AgentRequest.objects.count()


async def test_a_new_call_with_the_same_input_waits_for_a_person(
        bot: Caller, users: dict[str, User]) -> None:
    srv = server(bot)
    first = await decided(srv, users["reviewer"], {**CALL, "tool_use_id": "toolu_1"},
                          [{"type": "approve"}])
    assert json.loads(first) == {"behavior": "allow", "updatedInput": CALL["input"]}
    for again in ({**CALL, "tool_use_id": "toolu_2"}, CALL):
        waiting = asyncio.create_task(call(srv, "request_approval", again))
        [row] = await pending_soon()  # a new inbox row, not the earlier allow
        assert not waiting.done()
        await sync_to_async(service.decide)(users["reviewer"], row.root_thread_id,
                                            [{"type": "reject", "message": "not now"}])
        assert json.loads((await waiting).content[0].text) == {"behavior": "deny",
                                                               "message": "not now"}
    # A later session (another stdio process) is asked anew as well.
    later = await decided(server(bot), users["reviewer"], CALL, [{"type": "reject"}])
    assert json.loads(later)["behavior"] == "deny"
    assert await sync_to_async(requests_made)() == 4


async def test_the_same_tool_use_id_finds_its_own_decision(
        bot: Caller, users: dict[str, User]) -> None:
    args = {**CALL, "tool_use_id": "toolu_9"}
    edited = [{"type": "edit", "args": {"command": "rm -rf build/tmp"}}]
    first = await decided(server(bot), users["reviewer"], args, edited)
    again = await call(server(bot), "request_approval", args)  # retried: at once
    assert json.loads(again.content[0].text) == json.loads(first) == {
        "behavior": "allow", "updatedInput": {"command": "rm -rf build/tmp"}}
    assert await sync_to_async(requests_made)() == 1
    # The same id with another input is another call.
    other = asyncio.create_task(call(server(bot), "request_approval", {
        **args, "input": {"command": "rm -rf /"}}))
    await pending_soon()
    assert await sync_to_async(requests_made)() == 2
    other.cancel()


async def test_a_later_session_does_not_get_an_earlier_answer(
        bot: Caller, users: dict[str, User]) -> None:
    question = {"question": "Which colour?", "choices": ["blue", "red"]}
    assert await decided(server(bot), users["reviewer"], question,
                         [{"type": "respond", "message": "blue"}], "ask_human") == "blue"
    asked = asyncio.create_task(call(server(bot), "ask_human", question))
    await pending_soon()
    assert not asked.done()
    asked.cancel()


async def test_a_reviewers_words_are_not_an_allow(
        bot: Caller, users: dict[str, User]) -> None:
    text = await decided(server(bot), users["reviewer"], CALL,
                         [{"type": "respond", "message": "use make clean instead"}])
    assert json.loads(text) == {"behavior": "deny", "message": "use make clean instead"}


async def test_a_call_its_client_cancels_withdraws_its_request(
        bot: Caller, users: dict[str, User]) -> None:
    args = {**CALL, "tool_use_id": "toolu_5"}
    with pytest.raises(BaseExceptionGroup) as gave_up:  # and sends notifications/cancelled
        await call(server(bot), "request_approval", args, read_timeout_seconds=1)
    assert gave_up.group_contains(MCPError)
    for _ in range(100):
        if not await pending():
            break
        await asyncio.sleep(0.05)
    assert await pending() == []
    [row] = await sync_to_async(lambda: list(AgentRequest.objects.all()))()
    assert (await sync_to_async(service.outcome)(row))["status"] == "cancelled"
    assert await sync_to_async(
        AuditEntry.objects.filter(action="request.withdraw", object_id=row.id).exists)()
    # The same call asked again is asked anew, not answered "cancelled".
    again = asyncio.create_task(call(server(bot), "request_approval", args))
    await decide(users["reviewer"], [{"type": "approve"}])
    assert json.loads((await again).content[0].text)["behavior"] == "allow"


@pytest.mark.parametrize("args", [
    {"tool_name": "x" * 5000, "input": {}},
    {"tool_name": "Write", "input": {"content": "x" * (3 * 1024 * 1024)}},
    {"tool_name": "Write", "input": {"content": "a\u0000b"}},
    {"tool_name": "Write", "input": {"n": 2**60}},
    {"tool_name": "Write", "input": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]
                                                                ]]]]]]]]]]]]]]}},
    {"tool_name": "Write", "input": {}, "tool_use_id": "t" * 500},
])
async def test_the_apis_limits_hold_over_mcp(bot: Caller, args: dict[str, Any]) -> None:
    result = await call(server(bot), "request_approval", args)
    assert result.is_error and result.content[0].text
    assert await sync_to_async(requests_made)() == 0
    assert not await sync_to_async(
        AuditEntry.objects.filter(action__startswith="request.").exists)()


def test_the_limits_are_the_api_parsers() -> None:
    assert (limits.MAX_BODY_BYTES, limits.MAX_DEPTH, limits.MAX_SAFE_INTEGER) == (
        parser.MAX_BODY_BYTES, parser.MAX_DEPTH, parser.MAX_SAFE_INTEGER)
