"""Agent Inbox's ``HumanInterrupt`` and LangChain's ``HumanInTheLoopMiddleware`` requests
from a LangGraph graph: shown as the inbox's per-call form, answered in their own shape."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from forgeui.models import SteeringNote
from tests.forgeui.apiclient import Api

MAIL = {"to": "dana@example.com", "body": "the report", "outcome": ""}


def reviewer(api: Api) -> Client:
    client = Client()
    client.force_login(api.users["reviewer"])
    return client


def decide(api: Api, graph: str, form: dict[str, str]) -> tuple[dict[str, Any], str]:
    """Start ``graph``, check its page offers the form, post ``form``; the run, the page."""
    started = api.start(graph, MAIL)
    [pending] = api.pending_of(started)
    client = reviewer(api)
    page = client.get(f"/interrupts/{pending['id']}/").content.decode()
    response = client.post(f"/interrupts/{pending['id']}/decide/", form)
    assert response.status_code in (200, 302), response.content.decode()[:2000]
    return api.get("auditor", f"/api/runs/{started['run_id']}").json(), page


def test_agent_inbox_request_is_a_per_call_form(api: Api) -> None:
    started = api.start("lg_inbox", MAIL)
    [pending] = api.pending_of(started)
    page = reviewer(api).get(f"/interrupts/{pending['id']}/").content.decode()
    assert 'name="decision-0"' in page
    for value in ("approve", "edit", "respond", "reject"):
        assert f'value="{value}"' in page
    assert "send_email" in page and "Proposed by node" in page


@pytest.mark.parametrize(("form", "outcome"), [
    ({"decision-0": "approve"}, "sent to dana@example.com"),
    ({"decision-0": "edit", "args-0": '{"to": "lee@example.com", "body": "x"}'},
     "sent to lee@example.com"),
    ({"decision-0": "respond", "message-0": "not today"}, "told: not today"),
    ({"decision-0": "reject"}, "ignored"),
], ids=["accept", "edit", "response", "ignore"])
def test_agent_inbox_answer_is_a_human_response(api: Api, form: dict[str, str],
                                                outcome: str) -> None:
    run, _ = decide(api, "lg_inbox", form)
    assert run["status"] == "completed", run
    assert run["output"]["outcome"] == outcome


def test_middleware_request_offers_each_calls_decisions(api: Api) -> None:
    started = api.start("lg_middleware", MAIL)
    [pending] = api.pending_of(started)
    page = reviewer(api).get(f"/interrupts/{pending['id']}/").content.decode()
    assert 'name="decision-0"' in page and 'name="decision-1"' in page
    second = page[page.index('name="decision-1"') - 400:]
    assert 'name="decision-1" value="edit"' not in second  # delete_draft: approve/reject


def test_middleware_answer_is_decisions_in_order(api: Api) -> None:
    run, _ = decide(api, "lg_middleware", {
        "decision-0": "edit", "args-0": '{"to": "lee@example.com"}',
        "decision-1": "reject", "message-1": "keep it", "message": "be brief"})
    assert run["status"] == "completed", run
    assert run["output"]["outcome"] == ("send_email({'to': 'lee@example.com'}); "
                                        "not delete_draft: keep it")
    # The overall message is a steering note beside the answer, not part of it.
    assert list(SteeringNote.objects.values_list("text", flat=True)) == ["be brief"]


def test_a_decision_the_call_does_not_offer_keeps_the_form(api: Api) -> None:
    started = api.start("lg_middleware", MAIL)
    [pending] = api.pending_of(started)
    response = reviewer(api).post(f"/interrupts/{pending['id']}/decide/", {
        "decision-0": "approve", "decision-1": "edit", "args-1": '{"id": 8}'})
    assert response.status_code == 422
    assert "delete_draft takes one of approve, reject" in response.content.decode()
    assert api.pending_of(started)  # nothing was answered


def test_the_api_takes_answers_in_the_graphs_own_shape_only(api: Api) -> None:
    started = api.start("lg_inbox", MAIL)
    [pending] = api.pending_of(started)
    path = f"/api/interrupts/{pending['id']}/resume"
    for wrong in (True, [{"type": "approve"}], [{"type": "accept"}, {"type": "accept"}]):
        refused = api.post("reviewer", path, {"value": wrong})
        assert refused.status_code == 422, wrong
    assert api.post("reviewer", path, {"value": [{"type": "response", "args": "later"}]}
                    ).status_code == 202
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["output"]["outcome"] == "told: later"


def test_bulk_approve_answers_a_middleware_request_in_its_shape(api: Api) -> None:
    started = api.start("lg_middleware", MAIL)
    [pending] = api.pending_of(started)
    client = reviewer(api)
    row = client.get("/").content.decode()
    assert f'id="int-{pending["id"]}"' in row
    response = client.post("/interrupts/bulk/", {"action": "approve", "ids": [pending["id"]]})
    assert response.status_code in (200, 302)
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["output"]["outcome"] == "send_email; delete_draft"
