"""Tool calls decided one by one from Slack: buttons, and forms opened with views.open."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from forgeui.models import AgentRequest, Answer, Run
from forgeui.requests import service
from forgeui.runs import services
from forgeui.slack import linking
from forgeui.slack.models import LinkedVia
from tests.forgeui.slack.conftest import ephemerals, message_of, pending, post, press
from tests.forgeui.slack.standin import (
    SlackStandIn,
    buttons,
    press_payload,
    submission,
    text_of,
)
from tests.forgeui.slack.test_messages import THREE_CALLS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reviewer(users: dict[str, User]) -> User:
    linking.link(users["reviewer"], "U1", "T1", LinkedVia.COMMAND, by=None)
    return users["reviewer"]


def form(slack: SlackStandIn) -> dict[str, Any]:
    return dict(slack.of("views.open")[-1].args["view"])


def test_three_calls_approved_rejected_and_edited_from_slack(
        users: dict[str, User], reviewer: User, slack: SlackStandIn) -> None:
    made = service.create(service.Caller(users["supervisor"], agent="ops-bot"), THREE_CALLS)
    interrupt = pending("forge.request")
    press(slack, interrupt.pk, "approve:0", "U1")
    assert ephemerals(slack, "U1") == ["Call 1: approve noted. Still to decide: call 2, 3."]
    press(slack, interrupt.pk, "reject:1", "U1")
    assert post(submission(form(slack), "U1", {"text": "too noisy"})).status_code == 200
    press(slack, interrupt.pk, "edit:2", "U1")
    edit = form(slack)
    [field] = edit["blocks"]
    assert field["block_id"] == "arg:replicas" and field["element"]["initial_value"] == "3"
    assert not Answer.objects.exists()
    refused = post(submission(edit, "U1", {"arg:replicas": "40"}))
    assert refused.json()["response_action"] == "errors"
    assert "arg:replicas" in refused.json()["errors"] and not Answer.objects.exists()
    assert post(submission(edit, "U1", {"arg:replicas": "5"})).status_code == 200
    answer = Answer.objects.get(interrupt=interrupt)
    assert answer.sign_in == "slack" and answer.value["decisions"] == [
        {"type": "approve"}, {"type": "reject", "message": "too noisy"},
        {"type": "edit", "args": {"replicas": 5}}]
    assert service.outcome(AgentRequest.objects.get(pk=made.row.id))["status"] == "decided"
    shown = message_of(slack, interrupt.pk)
    assert buttons(shown["blocks"]) == {} and "by reviewer (in slack)" in text_of(
        shown["blocks"])


def test_a_langgraph_review_is_answered_in_its_own_shape(
        users: dict[str, User], reviewer: User, slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "lg_middleware",
                       {"to": "dana@example.com", "body": "the report", "outcome": ""})
    interrupt = pending("lg_middleware")
    press(slack, interrupt.pk, "edit:0", "U1")
    edit = form(slack)
    assert json.loads(edit["blocks"][0]["element"]["initial_value"])["to"] == "dana@example.com"
    bad = post(submission(edit, "U1", {"args": "{not json"}))
    assert bad.json()["response_action"] == "errors" and "args" in bad.json()["errors"]
    post(submission(edit, "U1", {"args": json.dumps({"to": "lee@example.com",
                                                     "body": "the report"})}))
    press(slack, interrupt.pk, "approve:1", "U1")
    value = Answer.objects.get(interrupt=interrupt).value
    assert value["decisions"][0]["type"] == "edit"
    assert value["decisions"][0]["edited_action"]["args"]["to"] == "lee@example.com"
    assert value["decisions"][1] == {"type": "approve"}
    assert Run.objects.get(pk=interrupt.run_id).status == "completed"


def test_a_breakpoint_cancelled_from_slack_records_the_reason(
        users: dict[str, User], reviewer: User, slack: SlackStandIn, tmp_path: Any) -> None:
    users["reviewer"].groups.add(*users["supervisor"].groups.all())
    services.start_run(users["supervisor"], "guarded",
                       {"version": "2.0.0", "ledger": str(tmp_path / "ledger")})
    interrupt = pending("guarded")
    press(slack, interrupt.pk, "cancel", "U1")
    empty = post(submission(form(slack), "U1", {"text": "  "}))
    assert empty.json()["errors"] == {"text": "Please write something here."}
    post(submission(form(slack), "U1", {"text": "wrong version"}))
    answer = Answer.objects.get(interrupt=interrupt)
    assert answer.cancels_run and answer.reason == "wrong version" and answer.sign_in == "slack"
    assert not (tmp_path / "ledger").exists()


def test_a_decision_a_call_does_not_allow_is_refused(
        users: dict[str, User], reviewer: User, slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "lg_middleware",
                       {"to": "dana@example.com", "body": "the report", "outcome": ""})
    interrupt = pending("lg_middleware")
    shown = message_of(slack, interrupt.pk)
    assert "respond:1" not in buttons(shown["blocks"])  # delete_draft: approve or reject
    forged = {"action_id": "respond:1", "value": json.dumps({"i": interrupt.pk, "c": 1})}
    press(slack, interrupt.pk, "approve:0", "U1")
    post(press_payload(forged, "U1", shown["channel"], shown["ts"]))
    post(submission(form(slack), "U1", {"text": "keep it"}))
    assert not Answer.objects.exists()
    assert ephemerals(slack, "U1")[-1].startswith("Not decided: delete_draft takes one of")
