"""``auto_approve`` rules never approve what they cannot read: negative rules (``not``,
``ne``, ``not_in``) included, booleans are not numbers, and every call of a request must
pass. The language itself is data in, verdict out; the last tests go through the API."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.models import ApiToken
from forgeui.runs.policies import rules
from tests.forgeui.apiclient import Api

NOT_BIG = {"not": {"field": "amount", "gt": 1000}}
UNREADABLE = [{}, {"amount": "5000"}, {"amount": True}, {"amount": [5000]},
              {"amount": None}, {"amount": {"value": 5000}}, [5000], "5000", None]


@pytest.mark.parametrize("args", UNREADABLE)
def test_not_never_approves_what_it_cannot_read(args: Any) -> None:
    assert rules.matches(NOT_BIG, args) is False
    assert rules.matches({"not": NOT_BIG}, args) is False  # nor does a double negation


def test_not_approves_what_it_can_read() -> None:
    assert rules.matches(NOT_BIG, {"amount": 999}) is True
    assert rules.matches(NOT_BIG, {"amount": 5000}) is False
    assert rules.matches({"not": NOT_BIG}, {"amount": 5000}) is True


@pytest.mark.parametrize(("rule", "readable", "unreadable"), [
    ({"field": "currency", "ne": "USD"}, {"currency": "EUR"},
     [{}, {"currency": 5}, {"currency": ["EUR"]}, {"currency": None}]),
    ({"field": "country", "not_in": ["KP", "IR"]}, {"country": "FR"},
     [{}, {"country": ["KP"]}, {"country": 7}, {"country": True}]),
    ({"field": "amount", "not_in": [5000]}, {"amount": 10},
     [{"amount": "10"}, {"amount": True}, {"amount": [10]}]),
])
def test_ne_and_not_in_need_a_value_of_their_kind(
        rule: dict[str, Any], readable: dict[str, Any], unreadable: list[Any]) -> None:
    assert rules.matches(rule, readable) is True
    for args in unreadable:
        assert rules.matches(rule, args) is False, args
        assert rules.matches({"not": {"not": rule}}, args) is False, args


def test_booleans_are_not_numbers() -> None:
    assert rules.matches({"field": "n", "eq": 1}, {"n": True}) is False
    assert rules.matches({"field": "n", "in": [0]}, {"n": False}) is False
    assert rules.matches({"field": "n", "eq": True}, {"n": 1}) is False
    assert rules.matches({"not": {"field": "n", "eq": 1}}, {"n": True}) is False
    assert rules.matches({"field": "n", "eq": 1}, {"n": 1}) is True
    assert rules.matches({"field": "n", "in": [0]}, {"n": 0}) is True


def test_all_and_any_decide_only_on_what_they_read() -> None:
    small_or_trusted = {"any": [{"field": "amount", "lt": 100},
                                {"not": {"field": "risk", "gte": 5}}]}
    assert rules.matches(small_or_trusted, {"amount": 50}) is True  # risk unread, not needed
    assert rules.matches(small_or_trusted, {"amount": 500}) is False  # risk unread: unknown
    assert rules.matches(small_or_trusted, {"amount": 500, "risk": 1}) is True
    assert rules.matches({"not": small_or_trusted}, {"amount": 500}) is False
    both = {"all": [{"field": "amount", "lt": 100}, {"field": "payee", "exists": True}]}
    assert rules.matches({"not": both}, {"amount": 50}) is True  # payee surely missing
    assert rules.matches({"not": both}, {"amount": "x", "payee": "ACME"}) is False


# -- through the API -----------------------------------------------------------------------


def ask(api: Api, token: str, *amounts: Any) -> dict[str, Any]:
    actions = [{"name": "pay", "args": {"amount": a} if a is not ... else {}} for a in amounts]
    response = api.client("reviewer").post(
        "/api/requests", {"actions": actions}, content_type="application/json",
        headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.content
    return dict(response.json())


@pytest.mark.django_db(transaction=True)
@override_settings(FORGE_POLICIES={"bot": {"agents": ["billing-bot"], "auto_approve": NOT_BIG}})
def test_a_negative_rule_leaves_unreadable_requests_to_people(
        api: Api, users: dict[str, User]) -> None:
    token = ApiToken.objects.issue(users["supervisor"], agent="billing-bot")[1]
    assert ask(api, token, 999)["status"] == "decided"
    for amount in ("5000", True, [5000], ...):  # text, a boolean, a list, missing
        assert ask(api, token, amount)["status"] == "pending", amount


@pytest.mark.django_db(transaction=True)
@override_settings(FORGE_POLICIES={"bot": {"agents": ["billing-bot"],
                                           "auto_approve": {"field": "amount", "lt": 100}}})
def test_every_call_of_a_request_must_pass_the_rule(api: Api, users: dict[str, User]) -> None:
    token = ApiToken.objects.issue(users["supervisor"], agent="billing-bot")[1]
    assert ask(api, token, 5, 5000)["status"] == "pending"
    assert ask(api, token, 5000, 5)["status"] == "pending"
    assert ask(api, token, 5, 6)["status"] == "decided"
