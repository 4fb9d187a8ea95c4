"""The MCP tools through the official SDK's client: streamable HTTP against a live daphne
(auto-negotiated and legacy modes) and stdio against ``manage.py mcp`` in a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import REQUEST_TIMEOUT

from tests.e2e.conftest import ROOT, Seed
from tests.forgeui.requests.live import Forge, forge

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, agents_seeded: Seed) -> Iterator[Forge]:
    with forge(tmp_path_factory.mktemp("mcp"), agents_seeded,
               FORGE_MCP_PROGRESS_SECONDS="0.5") as server:
        yield server


@contextlib.asynccontextmanager
async def http_client(live: Forge, mode: str, who: str = "bot") -> AsyncIterator[Client]:
    """The SDK's client on an HTTP client that sends the agent's token."""
    async with httpx2.AsyncClient(headers=live.headers(who),
                                  timeout=httpx2.Timeout(30, read=120)) as http:
        transport = streamable_http_client(live.url + "/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


def pending_request(live: Forge, tool: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = httpx.get(live.url + "/api/interrupts", params={"status": "pending",
                                                               "limit": 200},
                          headers=live.headers("reviewer"), timeout=30).json()["items"]
        for item in items:
            calls = (item["payload"] or {}).get("calls") or [{}]
            if item.get("request_id") and calls[0].get("name") == tool:
                return dict(item)
        time.sleep(0.1)
    raise AssertionError(f"no pending request for {tool}")


def decide_later(live: Forge, tool: str, decisions: list[dict[str, Any]],
                 after: float = 0) -> threading.Thread:
    def run() -> None:
        item = pending_request(live, tool)
        time.sleep(after)
        response = httpx.post(f"{live.url}/api/requests/{item['request_id']}/decision",
                              json={"decisions": decisions}, timeout=30,
                              headers=live.headers("reviewer"))
        assert response.status_code == 200, response.text

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_request_approval_over_http_returns_the_permission_prompt_format(
        live: Forge, mode: str) -> None:
    tool = f"Bash-{mode}"
    decider = decide_later(live, tool, [{"type": "edit", "args": {"command": "ls -l"}}])
    async with http_client(live, mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"request_approval", "ask_human"} <= names
        result = await client.call_tool("request_approval",
                                        {"tool_name": tool, "input": {"command": "ls"}})
    await asyncio.to_thread(decider.join, 30)
    assert json.loads(result.content[0].text) == {"behavior": "allow",
                                                  "updatedInput": {"command": "ls -l"}}


async def test_ask_human_over_http_returns_the_words(live: Forge) -> None:
    decider = decide_later(live, "ask_human", [{"type": "respond", "message": "use blue"}])
    async with http_client(live, "auto") as client:
        result = await client.call_tool("ask_human", {"question": "Which colour?",
                                                      "choices": ["blue", "red"]})
    await asyncio.to_thread(decider.join, 30)
    assert result.content[0].text == "use blue"


def request_rows(live: Forge, tool: str) -> list[dict[str, Any]]:
    rows = httpx.get(live.url + "/api/interrupts", params={"limit": 200},
                     headers=live.headers("reviewer"), timeout=30).json()["items"]
    return [r for r in rows if r.get("request_id")
            and (r["payload"].get("calls") or [{}])[0].get("name") == tool]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_its_client_gives_up_on_is_withdrawn_and_asked_anew(
        live: Forge, mode: str) -> None:
    tool = f"Write-{mode}"
    args = {"tool_name": tool, "input": {"file_path": "/tmp/a", "content": "x"},
            "tool_use_id": f"toolu_{mode}"}
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with http_client(live, mode) as client:
        with pytest.raises(MCPError) as gave_up:  # the client gives up: so does forge
            await client.call_tool("request_approval", args, read_timeout_seconds=1.5)
        assert gave_up.value.error.code == REQUEST_TIMEOUT
    deadline = time.monotonic() + 30
    while [r["status"] for r in await asyncio.to_thread(request_rows, live, tool)] != [
            "cancelled"]:
        assert time.monotonic() < deadline, "the abandoned request is still pending"
        await asyncio.sleep(0.2)
    decider = decide_later(live, tool, [{"type": "reject", "message": "not there"}],
                           after=2)
    async with http_client(live, mode) as client:  # the same call again: a new row
        result = await client.call_tool("request_approval", args, progress_callback=on_progress)
    await asyncio.to_thread(decider.join, 30)
    assert json.loads(result.content[0].text) == {"behavior": "deny", "message": "not there"}
    rows = await asyncio.to_thread(request_rows, live, tool)
    assert sorted(r["status"] for r in rows) == ["answered", "cancelled"]
    assert progress and progress == sorted(progress)  # told it is still waiting
    async with http_client(live, "legacy") as client:  # and again: its decision, at once
        again = await client.call_tool("request_approval", args)
    assert json.loads(again.content[0].text) == {"behavior": "deny", "message": "not there"}
    assert len(await asyncio.to_thread(request_rows, live, tool)) == 2


def test_mcp_without_an_agent_token_is_refused(live: Forge) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(live.url + "/mcp", json=body, timeout=30).status_code == 401
    person = httpx.post(live.url + "/mcp", json=body, headers=live.headers("reviewer"),
                        timeout=30)
    assert person.status_code == 403


def test_a_web_process_loads_the_mcp_sdk_only_when_called() -> None:
    """The SDK is loaded by the first ``/mcp`` call (the tests above), not at start."""
    probe = ("import sys, forgeui.asgi; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT),
           "DJANGO_SETTINGS_MODULE": "forgeui.settings"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_request_approval_over_stdio(live: Forge) -> None:
    env = {**live.env, "FORGE_AGENT_TOKEN": live.tokens["bot"], "PYTHONPATH": str(ROOT),
           "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"],
                                   env=env, cwd=str(ROOT))
    decider = decide_later(live, "Edit-stdio", [{"type": "approve"}])
    async with Client(params, read_timeout_seconds=120) as client:
        result = await client.call_tool("request_approval",
                                        {"tool_name": "Edit-stdio", "input": {"path": "x"}})
    await asyncio.to_thread(decider.join, 30)
    assert json.loads(result.content[0].text) == {"behavior": "allow",
                                                  "updatedInput": {"path": "x"}}
