"""docs/langgraph.md's ``create_agent`` + ``HumanInTheLoopMiddleware`` recipe, in both of the
middleware's modes, answered through the API (Django's test client, the real executor on
the ORM): each mode gets its answer in the shape it asks for, and a call the graph asks
again becomes pending again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tests.forgeui.apiclient import Api

GRAPHS = {"lc_per_call": "tests.forgeui.recipes.agent_graphs:per_call",
          "lc_batched": "tests.forgeui.recipes.agent_graphs:batched"}
ASK = {"messages": [{"role": "user", "content": "Mail Dana the report"}]}
EDITED = {"to": "dana@example.com", "body": "the report"}


@pytest.fixture
def api(users: dict[str, User]) -> Iterator[Api]:
    with override_settings(FORGE_GRAPHS={**settings.FORGE_GRAPHS, **GRAPHS}):
        yield Api(users)


def reviewer(api: Api) -> Client:
    client = Client()
    client.force_login(api.users["reviewer"])
    return client


def answer(api: Api, pending: dict[str, Any], value: Any) -> Any:
    return api.post("reviewer", f"/api/interrupts/{pending['id']}/resume", {"value": value})


def run_of(api: Api, started: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    return found


def said(run: dict[str, Any]) -> str:
    """The agent's last words."""
    return str(run["output"]["messages"][-1]["content"])


@pytest.mark.parametrize("graph", ["lc_per_call", "lc_batched"])
def test_each_mode_is_one_call_to_approve_edit_or_reject(api: Api, graph: str) -> None:
    started = api.start(graph, ASK)
    [pending] = api.pending_of(started)
    [call] = pending["payload"]["action_requests"]
    assert call["name"] == "send_email" and call["args"]["to"] == "agent@example.com"
    [config] = pending["payload"]["review_configs"]
    assert config["allowed_decisions"] == ["approve", "edit", "reject", "respond"]
    page = reviewer(api).get(f"/interrupts/{pending['id']}/").content.decode()
    assert 'name="decision-0" value="edit"' in page
    response = answer(api, pending, {"decisions": [
        {"type": "edit", "edited_action": {"name": "send_email", "args": EDITED}}]})
    assert response.status_code == 202, response.content
    run = run_of(api, started)
    assert run["status"] == "completed", run
    assert said(run).endswith("sent to dana@example.com")


def test_per_call_approve_from_the_interrupt_page_runs_the_call(api: Api) -> None:
    started = api.start("lc_per_call", ASK)
    [pending] = api.pending_of(started)
    refused = answer(api, pending, True)  # the middleware takes no bare true
    assert refused.status_code == 422, refused.content
    assert f'id="int-{pending["id"]}"' in reviewer(api).get("/").content.decode()
    response = reviewer(api).post(f"/interrupts/{pending['id']}/decide/", {"decision-0": "approve"})
    assert response.status_code in (200, 302), response.content.decode()[:2000]
    run = run_of(api, started)
    assert run["status"] == "completed", run
    assert said(run) == "done: sent to agent@example.com"


def test_bulk_approve_answers_a_per_call_request_with_one_decision(api: Api) -> None:
    started = api.start("lc_per_call", ASK)
    [pending] = api.pending_of(started)
    response = reviewer(api).post("/interrupts/bulk/", {"action": "approve",
                                                        "ids": [pending["id"]]})
    assert response.status_code in (200, 302)
    run = run_of(api, started)
    assert run["status"] == "completed", run
    assert said(run) == "done: sent to agent@example.com"


def test_a_per_call_answer_the_middleware_refuses_is_asked_again(api: Api) -> None:
    """An edit whose args the tool's schema refuses fails the run; recovered, LangGraph
    asks that call again, and its row is pending again, to be answered anew."""
    started = api.start("lc_per_call", ASK)
    [pending] = api.pending_of(started)
    bad = {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": 5}}}
    assert answer(api, pending, {"decisions": [bad]}).status_code == 202
    assert run_of(api, started)["status"] == "failed"
    recovered = api.post("supervisor", f"/api/runs/{started['run_id']}/recover")
    assert recovered.status_code == 202, recovered.content
    [again] = api.pending_of(started)
    assert again["payload"]["args"] == pending["payload"]["args"]
    assert answer(api, again, {"decisions": [{"type": "reject", "message": "no"}]}
                  ).status_code == 202
    run = run_of(api, started)
    assert run["status"] == "completed", run
    assert said(run).startswith("done: User rejected the tool call for `send_email`")


@pytest.mark.parametrize(("allowed", "offered"), [
    (["approve", "reject"], ["approve", "reject"]), (["edit"], ["edit"]),
    (["respond", "approve"], ["approve", "respond"])])
def test_a_per_call_request_offers_what_its_response_schema_allows(
        allowed: list[str], offered: list[str]) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    from forgeui.langgraph import percall
    from tests.forgeui.recipes.agent_graphs import MailingModel

    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        return to

    graph = create_agent(MailingModel(), tools=[send_email], checkpointer=InMemorySaver(),
                         middleware=[HumanInTheLoopMiddleware(
                             interrupt_on={"send_email": {"allowed_decisions": allowed}},
                             interrupt_mode="per_call")])
    [asked] = graph.invoke(ASK, {"configurable": {"thread_id": "t"}})["__interrupt__"]
    shown = percall.presented(asked.value, asked.response_schema)
    assert shown["review_configs"] == [{"action_name": "send_email",
                                        "allowed_decisions": offered}]
