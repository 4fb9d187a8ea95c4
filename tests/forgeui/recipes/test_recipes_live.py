"""The agent recipes of docs/agents.md and docs/langgraph.md, run as they show them
against one live forge (daphne on a copy of the seeded database), with a person answering
through the API as a reviewer:

- the OpenAI Agents SDK tool, on the SDK's own scripted (fake) ``Model``;
- LangChain's ``create_agent`` + ``HumanInTheLoopMiddleware``, batched and per call, on a
  fake chat model (``agent_graphs``), registered as a graph;
- the MCP tools through the official SDK's client, over HTTP and stdio, with the input
  Claude Code's ``--permission-prompt-tool`` sends (a new ``tool_use_id`` per call).

Each call is answered by its own decision, edits included, and does what was decided."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.docblocks import block, replaced
from tests.e2e.conftest import ROOT, Seed, server_env
from tests.forgeui.requests.live import Forge, forge, with_agents
from tests.processes import wait_until

pytestmark = pytest.mark.slow

AGENTS = "docs/agents.md"
GRAPHS = {"lc_per_call": "tests.forgeui.recipes.agent_graphs:per_call",
          "lc_batched": "tests.forgeui.recipes.agent_graphs:batched"}
EDITED = {"to": "dana@example.com", "body": "the report"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[Forge]:
    folder = tmp_path_factory.mktemp("recipes")
    graphs = {**json.loads(server_env(folder)["FORGE_GRAPHS"]), **GRAPHS}
    with forge(folder, with_agents(seeded, tmp_path_factory.mktemp("recipes-seed")),
               FORGE_GRAPHS=json.dumps(graphs)) as server:
        yield server


def api(live: Forge, method: str, path: str, body: Any = None, who: str = "reviewer") -> Any:
    response = httpx.request(method, live.url + path, json=body, headers=live.headers(who),
                             timeout=30)
    assert response.status_code < 300, f"{method} {path}: {response.text[:500]}"
    return response.json()


def pending_call(live: Forge, tool: str, args: dict[str, Any],
                 timeout: float = 60) -> dict[str, Any]:
    """The pending inbox row asking about ``tool`` with ``args`` (waiting for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for item in api(live, "GET", "/api/interrupts?status=pending&limit=200")["items"]:
            calls = (item["payload"] or {}).get("calls") or [{}]
            if calls[0].get("name") == tool and calls[0].get("args") == args:
                return dict(item)
        time.sleep(0.1)
    raise AssertionError(f"no pending request for {tool} {args}")


def reviewer_decides(live: Forge, tool: str, args: dict[str, Any],
                     decision: dict[str, Any]) -> threading.Thread:
    """A reviewer, in a thread, answering the request about ``tool(args)`` once it is in."""
    def decide() -> None:
        item = pending_call(live, tool, args)
        api(live, "POST", f"/api/requests/{item['request_id']}/decision",
            {"decisions": [decision]})

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    return thread


def ended(run: dict[str, Any]) -> dict[str, Any] | None:
    return None if run["status"] in ("running", "interrupted") else run


class Outbox:
    def __init__(self) -> None:
        self.sent: list[dict[str, str]] = []

    def send(self, to: str, body: str) -> None:
        self.sent.append({"to": to, "body": body})


async def test_the_agents_sdk_recipe_sends_what_the_reviewer_edited(
        live: Forge, monkeypatch: pytest.MonkeyPatch) -> None:
    from agents import MultiProvider
    from agents.testing import ScriptedModel, assistant_message, function_call

    proposed = {"to": "agent@example.com", "body": "the report"}
    model = ScriptedModel([[function_call("send_email", proposed, call_id="call-1")],
                           [assistant_message("Mailed.")]])
    # The model is the SDK's network I/O: the provider hands out the scripted one.
    monkeypatch.setattr(MultiProvider, "get_model", lambda self, name: model)
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    monkeypatch.setenv("FORGE_AGENT_TOKEN", live.tokens["bot"])
    code = replaced(block(AGENTS, "from agents import"), "https://forge.example.com", live.url)
    outbox = Outbox()
    namespace: dict[str, Any] = {"outbox": outbox}
    decider = reviewer_decides(live, "send_email", proposed,
                               {"type": "edit", "args": EDITED})
    ran = eval(compile(code, AGENTS, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT),
               namespace)
    await asyncio.wait_for(ran, 120)
    namespace["forge"].close()
    await asyncio.to_thread(decider.join, 60)
    assert outbox.sent == [EDITED]
    assert namespace["result"].final_output == "Mailed."
    tool_output = [i for i in model.calls[1].input if isinstance(i, dict)
                   and i.get("type") == "function_call_output"]
    assert [i["output"] for i in tool_output] == ["sent to dana@example.com"]


@pytest.mark.parametrize("graph", ["lc_per_call", "lc_batched"])
def test_the_langchain_recipe_runs_what_the_reviewer_edited(live: Forge, graph: str) -> None:
    started = api(live, "POST", "/api/runs", {"graph": graph, "input": {
        "messages": [{"role": "user", "content": "Mail Dana the report"}]}}, who="supervisor")
    [row] = wait_until(lambda: api(live, "GET", "/api/interrupts?status=pending&"
                                   f"root_thread_id={started['thread_id']}")["items"],
                       60, "the run to pause")
    [call] = row["payload"]["action_requests"]
    assert call["args"]["to"] == "agent@example.com"
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}}
    api(live, "POST", f"/api/interrupts/{row['id']}/resume", {"value": {"decisions": [edit]}})
    run = wait_until(lambda: ended(api(live, "GET", f"/api/runs/{started['run_id']}")), 60,
                     "the run to end")
    assert run["status"] == "completed", run
    assert run["output"]["messages"][-1]["content"].endswith("sent to dana@example.com")


def permission_prompt(tool: str, input: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    """What Claude Code's ``--permission-prompt-tool`` sends for one tool use."""
    return {"tool_name": tool, "input": input, "tool_use_id": tool_use_id}


async def ask_over_mcp(client: Client, live: Forge, calls: list[tuple[dict[str, Any],
                       dict[str, Any]]]) -> list[Any]:
    """Each permission prompt, answered by its own reviewer decision; the MCP answers."""
    answers = []
    for prompt, decision in calls:
        decider = reviewer_decides(live, prompt["tool_name"], prompt["input"], decision)
        result = await client.call_tool("request_approval", prompt)
        await asyncio.to_thread(decider.join, 60)
        answers.append(json.loads(result.content[0].text))
    return answers


async def test_claude_codes_permission_prompts_over_http(live: Forge) -> None:
    first = permission_prompt("Bash", {"command": "ls"}, "toolu_http_1")
    second = permission_prompt("Bash", {"command": "rm -rf build"}, "toolu_http_2")
    async with (httpx2.AsyncClient(headers=live.headers("bot"),
                                   timeout=httpx2.Timeout(30, read=120)) as http,
                Client(streamable_http_client(live.url + "/mcp", http_client=http)) as client):
        answers = await ask_over_mcp(client, live, [
            (first, {"type": "edit", "args": {"command": "ls -l"}}),
            (second, {"type": "reject", "message": "keep the build"})])
    assert answers == [{"behavior": "allow", "updatedInput": {"command": "ls -l"}},
                       {"behavior": "deny", "message": "keep the build"}]


async def test_claude_codes_permission_prompts_over_stdio(live: Forge) -> None:
    env = {**live.env, "FORGE_AGENT_TOKEN": live.tokens["bot"], "PYTHONPATH": str(ROOT),
           "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"],
                                   env=env, cwd=str(ROOT))
    first = permission_prompt("Write", {"file_path": "notes.md", "content": "a"}, "toolu_io_1")
    second = permission_prompt("Write", {"file_path": "todo.md", "content": "b"}, "toolu_io_2")
    async with Client(params, read_timeout_seconds=120) as client:
        answers = await ask_over_mcp(client, live, [
            (first, {"type": "approve"}),
            (second, {"type": "edit", "args": {"file_path": "todo.md", "content": "c"}})])
    assert answers == [
        {"behavior": "allow", "updatedInput": first["input"]},
        {"behavior": "allow", "updatedInput": {"file_path": "todo.md", "content": "c"}}]
