"""A proposed call whose ``args_schema`` is simple is edited as a form on the interrupt
page (the answer form's fields), not as raw JSON; a refused form keeps what was typed."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from forgeui.models import ApiToken
from tests.forgeui.apiclient import Api

SCHEMA = {"type": "object", "required": ["to", "amount"],
          "properties": {"to": {"type": "string", "format": "email"},
                         "amount": {"type": "integer", "minimum": 1},
                         "urgent": {"type": "boolean"},
                         "currency": {"enum": ["EUR", "USD"]}}}
ARGS = {"to": "ana@example.com", "amount": 40, "urgent": False, "currency": "EUR"}


def ask(api: Api, args: Any = ARGS, schema: Any = SCHEMA) -> tuple[str, str]:
    """A request from an agent; its id and its interrupt's id."""
    secret = ApiToken.objects.issue(api.users["nobody"], name="bot", agent="payer")[1]
    made = api.client("reviewer").post(
        "/api/requests", {"actions": [{"name": "pay", "args": args, "args_schema": schema}]},
        content_type="application/json", headers={"Authorization": f"Bearer {secret}"})
    assert made.status_code == 201, made.content
    return made.json()["id"], made.json()["interrupt_id"]


def reviewer(api: Api) -> Client:
    client = Client()
    client.force_login(api.users["reviewer"])
    return client


def value_of(page: str, name: str) -> str:
    found = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
    assert found, f"no input {name}"
    value = re.search(r'value="([^"]*)"', found.group(0))
    return value.group(1) if value else ""


def test_the_page_offers_the_args_as_fields_prefilled(api: Api) -> None:
    _, interrupt_id = ask(api)
    page = reviewer(api).get(f"/interrupts/{interrupt_id}/").content.decode()
    assert value_of(page, "args-0-to") == "ana@example.com"
    assert value_of(page, "args-0-amount") == "40"
    assert re.search(r'<option value="0" selected>EUR</option>', page)
    assert 'name="args-0"' not in page  # no JSON box beside the form


def test_an_edit_through_the_form_sends_the_edited_args(api: Api) -> None:
    request_id, interrupt_id = ask(api)
    response = reviewer(api).post(f"/interrupts/{interrupt_id}/decide/", {
        "decision-0": "edit", "args-0-to": "lee@example.com", "args-0-amount": "35",
        "args-0-urgent": "true", "args-0-currency": "1"})
    assert response.status_code in (200, 302), response.content.decode()[:2000]
    read = api.get("reviewer", f"/api/requests/{request_id}").json()
    assert read["status"] == "decided"
    assert read["decisions"][0]["type"] == "edit"
    assert read["decisions"][0]["args"] == {"to": "lee@example.com", "amount": 35,
                                            "urgent": True, "currency": "USD"}


@pytest.mark.parametrize(("typed", "message"), [
    ({"args-0-amount": "many"}, "Enter a whole number."),
    ({"args-0-amount": "0"}, "greater than or equal to 1"),
    ({"args-0-to": ""}, "This field is required."),
    ({"args-0-to": "not-an-address"}, "is not a &#x27;email&#x27;"),
])
def test_a_refused_edit_keeps_what_was_typed(api: Api, typed: dict[str, str],
                                              message: str) -> None:
    request_id, interrupt_id = ask(api)
    form = {"decision-0": "edit", "args-0-to": "lee@example.com", "args-0-amount": "35",
            "args-0-currency": "1", "message": "kept too", **typed}
    response = reviewer(api).post(f"/interrupts/{interrupt_id}/decide/", form)
    page = response.content.decode()
    assert response.status_code == 422
    assert message in page
    for name, value in typed.items():
        assert value_of(page, name) == value
    assert "kept too" in page
    assert re.search(r'value="edit" checked', page)
    assert api.get("reviewer", f"/api/requests/{request_id}").json()["status"] == "pending"


def test_approve_sends_the_untouched_args_and_refuses_changed_ones(api: Api) -> None:
    request_id, interrupt_id = ask(api)
    untouched = {"args-0-to": "ana@example.com", "args-0-amount": "40",
                 "args-0-urgent": "false", "args-0-currency": "0"}
    changed = reviewer(api).post(f"/interrupts/{interrupt_id}/decide/", {
        "decision-0": "approve", **untouched, "args-0-amount": "4000"})
    assert changed.status_code == 422
    assert "chose Approve, which sends them unchanged" in changed.content.decode()
    assert value_of(changed.content.decode(), "args-0-amount") == "4000"
    response = reviewer(api).post(f"/interrupts/{interrupt_id}/decide/", {
        "decision-0": "approve", **untouched})
    assert response.status_code in (200, 302)
    read = api.get("reviewer", f"/api/requests/{request_id}").json()
    assert read["decisions"][0]["type"] == "approve"
    assert read["decisions"][0]["args"] is None


@pytest.mark.parametrize(("args", "schema"), [
    ({"to": "a", "extra": 1}, {"type": "object", "properties": {"to": {"type": "string"}}}),
    ({"to": {"name": "a"}}, {"type": "object", "properties": {"to": {"type": "object"}}}),
], ids=["args-beyond-the-schema", "nested"])
def test_what_a_form_cannot_hold_is_still_edited_as_json(api: Api, args: Any,
                                                          schema: Any) -> None:
    _, interrupt_id = ask(api, args, schema)
    page = reviewer(api).get(f"/interrupts/{interrupt_id}/").content.decode()
    assert 'name="args-0"' in page and 'name="args-0-to"' not in page
