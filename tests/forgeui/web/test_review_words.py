"""A reviewer reads tool-call requests in words: a LangGraph review row is titled by the
tools it asks about, and per-call decisions read one clause per call, on the interrupt
page and in the decisions list, never as cut-off JSON."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from forgeui.runs.wording import answer_words, summarize
from tests.forgeui.apiclient import Api

TICKET = {"customer": "sam@example.com", "order": "#5521", "amount": 40}
REFUND = "issue_refund: Edited amount 40 → 35; send_email: Approved"


def browser(api: Api, who: str) -> Client:
    client = Client()
    client.force_login(api.users[who])
    return client


def refund_pending(api: Api) -> dict[str, Any]:
    [pending] = api.pending_of(api.start("refund_agent", TICKET))
    return pending


def test_a_langgraph_review_row_is_titled_by_its_tools(api: Api) -> None:
    pending = refund_pending(api)
    inbox = browser(api, "reviewer").get("/").content.decode()
    assert ("Approve issue_refund, send_email? · issue_refund: order #5521, amount 40 · "
            "send_email: to sam@example.com") in inbox
    assert f'class="row-link">{pending["node"]}</a>' not in inbox


def test_per_call_decisions_read_in_words_on_the_page_and_the_list(api: Api) -> None:
    pending = refund_pending(api)
    decided = browser(api, "reviewer").post(f"/interrupts/{pending['id']}/decide/", {
        "decision-0": "edit", "args-0": '{"order": "#5521", "amount": 35}',
        "decision-1": "approve"})
    assert decided.status_code in (200, 302), decided.content.decode()[:2000]
    page = browser(api, "auditor").get(f"/interrupts/{pending['id']}/").content.decode()
    listed = browser(api, "auditor").get("/audit/decisions/").content.decode()
    for html in (page, listed):
        assert REFUND in html
        assert "{&quot;decisions&quot;" not in html.split('class="json-toggle"')[0]


MIDDLEWARE = {"action_requests": [{"name": "issue_refund", "args": {"amount": 40}},
                                  {"name": "send_email", "args": {"to": "sam@example.com"}}],
              "review_configs": []}
AGENT_REQUEST = {"title": "Approve deploy, notify?", "agent": {"name": "ops-bot"},
                 "calls": [{"name": "deploy", "args": {"version": "2.4.0"}},
                           {"name": "notify", "args": {"channel": "#ops"}}]}
INBOX = [{"action_request": {"action": "send_email", "args": {"to": "a@b.c"}},
          "config": {"allow_accept": True, "allow_edit": True}},
         {"action_request": {"action": "archive", "args": {"id": 7}},
          "config": {"allow_ignore": True}}]


@pytest.mark.parametrize(("value", "payload", "expected"), [
    pytest.param({"decisions": [{"type": "edit", "edited_action": {
        "name": "issue_refund", "args": {"amount": 35}}}, {"type": "approve"}]}, MIDDLEWARE,
        REFUND, id="middleware"),
    pytest.param({"decisions": [{"type": "approve"},
                                {"type": "reject", "message": "not at night"}],
                  "message": "ship it"}, AGENT_REQUEST,
                 "deploy: Approved; notify: Rejected: not at night · Note: ship it",
                 id="agent-request"),
    pytest.param({"decisions": [{"type": "edit", "args": {"version": "2.4.1", "dry": True}},
                                {"type": "respond", "message": "use #deploys"}]},
                 AGENT_REQUEST,
                 "deploy: Edited version 2.4.0 → 2.4.1, dry → yes; notify: Responded: use #deploys",
                 id="agent-request-edit-and-respond"),
    pytest.param([{"type": "edit", "args": {"action": "send_email", "args": {"to": "x@y.z"}}},
                  {"type": "ignore", "args": None}], INBOX,
                 "send_email: Edited to a@b.c → x@y.z; archive: Ignored", id="agent-inbox-list"),
])
def test_per_call_decisions_in_words(value: Any, payload: Any, expected: str) -> None:
    assert answer_words(value, payload) == expected


@pytest.mark.parametrize(("payload", "node", "expected"), [
    pytest.param(MIDDLEWARE, "HumanInTheLoopMiddleware.after_model",
                 "Approve issue_refund, send_email? · issue_refund: amount 40 · "
                 "send_email: to sam@example.com", id="middleware"),
    pytest.param(INBOX, "review", "Approve send_email, archive? · send_email: to a@b.c · "
                 "archive: id 7", id="agent-inbox-list"),
    pytest.param(AGENT_REQUEST, "ask", "Approve deploy, notify? · deploy: version 2.4.0 · "
                 "notify: channel #ops", id="agent-request"),
])
def test_a_tool_call_request_is_summarised_by_its_tools(payload: Any, node: str,
                                                         expected: str) -> None:
    assert summarize(payload, node) == expected


def test_a_langgraph_review_page_is_headed_by_its_tools(api: Api) -> None:
    pending = refund_pending(api)
    page = browser(api, "reviewer").get(f"/interrupts/{pending['id']}/").content.decode()
    assert "<h1>Approve issue_refund, send_email?</h1>" in page
