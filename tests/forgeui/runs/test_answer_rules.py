"""One rule for every answer path (single, bulk, API, targeted, resume map): an answer
must fit the interrupt's ``actions`` and ``answer_schema``. A schema that is not a valid
JSON Schema fails the node when the interrupt is created, and an old row that holds one
renders without a form and refuses answers with 422, never 500.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Answer, Interrupt, Run
from forgeui.runs import services
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

ACTIONS = {"actions": ["accept", "respond"]}
SCHEMA = {"answer_schema": {"type": "object", "properties": {"amount": {"type": "integer"}},
                            "required": ["amount"]}}


def pause(users: dict[str, User], payload: dict[str, Any]) -> Interrupt:
    started = services.start_run(users["supervisor"], "custom", {"payload": payload})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


@pytest.mark.parametrize(("payload", "value", "message"), [
    (ACTIONS, True, "takes {\"type\": action"),
    (ACTIONS, {"type": "ignore", "args": None}, "does not offer 'ignore'"),
    (ACTIONS, {"type": "respond", "args": ""}, "needs some text"),
    (ACTIONS, {"type": "accept", "args": None, "extra": 1}, "takes {\"type\": action"),
    (SCHEMA, True, "does not match the interrupt's schema"),
])
def test_the_api_refuses_what_does_not_fit(users: dict[str, User], api: Api,
                                           payload: dict[str, Any], value: Any,
                                           message: str) -> None:
    interrupt = pause(users, payload)
    response = api.post("reviewer", f"/api/interrupts/{interrupt.pk}/resume", {"value": value})
    assert response.status_code == 422, response.content
    assert message in str(response.json())
    targeted = api.post("supervisor", "/api/resume", {"run_id": interrupt.run_id,
                                                      "value": value})
    assert targeted.status_code == 422, targeted.content
    mapped = api.post("supervisor", "/api/resume_map", {
        "thread_id": interrupt.root_thread_id, "answers": {interrupt.pk: value}})
    assert mapped.status_code == 422, mapped.content
    assert not Answer.objects.exists()
    assert Interrupt.objects.get(pk=interrupt.pk).status == "pending"


@pytest.mark.parametrize(("payload", "value"), [
    (ACTIONS, {"type": "accept", "args": None}), (ACTIONS, {"type": "respond", "args": "ok"}),
    (SCHEMA, {"amount": 3}), ({}, True),
])
def test_the_api_accepts_what_fits(users: dict[str, User], api: Api,
                                   payload: dict[str, Any], value: Any) -> None:
    interrupt = pause(users, payload)
    response = api.post("reviewer", f"/api/interrupts/{interrupt.pk}/resume", {"value": value})
    assert response.status_code == 202, response.content
    assert Answer.objects.get(interrupt=interrupt).value == value


def test_bulk_reports_rows_the_value_does_not_fit_as_invalid(
        users: dict[str, User], api: Api) -> None:
    with_actions, plain = pause(users, ACTIONS), pause(users, {})
    response = api.post("reviewer", "/api/interrupts/bulk_resume",
                        {"ids": [with_actions.pk, plain.pk], "value": True})
    assert response.status_code == 200, response.content
    outcomes = {item["interrupt_id"]: item["outcome"] for item in response.json()["items"]}
    assert outcomes == {with_actions.pk: "invalid", plain.pk: "accepted"}
    assert list(Answer.objects.values_list("interrupt_id", flat=True)) == [plain.pk]


def test_the_pages_json_answer_follows_the_same_rule(users: dict[str, User]) -> None:
    interrupt = pause(users, ACTIONS)
    client = Client()
    client.force_login(users["reviewer"])
    page = client.post(f"/interrupts/{interrupt.pk}/answer/",
                       {"action": "json", "json_value": "true", "where": "panel"})
    assert page.status_code == 422
    assert "takes {&quot;type&quot;: action" in page.content.decode()
    assert not Answer.objects.exists()


def test_a_malformed_answer_schema_fails_the_node_naming_the_problem(
        users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "custom",
                                 {"payload": {"answer_schema": {"maxLength": "x"}}})
    run = Run.objects.get(pk=started.run_id)
    assert run.status == "failed"
    assert "answer_schema is not a valid JSON Schema at maxLength" in str(run.error)
    assert not Interrupt.objects.filter(run=run).exists()


def test_an_old_row_with_a_bad_schema_renders_and_refuses_answers_with_422(
        users: dict[str, User], api: Api) -> None:
    interrupt = pause(users, {})
    bad = {"question": "old", "answer_schema": {"maxLength": "x"}}
    Interrupt.objects.filter(pk=interrupt.pk).update(payload=bad)  # written before checks
    client = Client()
    client.force_login(users["reviewer"])
    for path in (f"/interrupts/{interrupt.pk}/", f"/runs/{interrupt.run_id}/", "/"):
        response = client.get(path)
        assert response.status_code == 200, path
    panel = client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert "cannot be answered" in panel and 'name="action"' not in panel
    refused = api.post("reviewer", f"/api/interrupts/{interrupt.pk}/resume",
                       {"value": "abc"})
    assert refused.status_code == 422 and "maxLength" in str(refused.json()["detail"])
    page = client.post(f"/interrupts/{interrupt.pk}/answer/",
                       {"action": "json", "json_value": '"abc"', "where": "panel"})
    assert page.status_code == 422
    assert not Answer.objects.exists()
