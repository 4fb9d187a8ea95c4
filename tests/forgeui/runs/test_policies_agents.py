"""Which policy an agent's request falls under: the one its token selects. A name the agent
gives itself may only add requirements (more approvals, fewer people who count), never
a rule that approves, a lower count or another agent's policy."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings

from forgeui.models import ApiToken, Approval, Interrupt
from forgeui.runs import deadlines
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

# docs/policies.md's own example policy.
PAYMENTS = {"payments": {"agents": ["billing-bot"], "approvals": 2, "groups": ["finance"],
                         "auto_approve": {"field": "amount", "lt": 1000}}}
LAX = {"lax": {"agents": ["lax-bot"], "approvals": 1,
               "auto_approve": {"field": "amount", "lt": 10**9}}}
STRICT = {"strict": {"agents": ["strict-bot"], "approvals": 3, "groups": ["leads"]}}


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """alice, bob, carol and erin review in finance (erin in leads too); dave outside it."""
    finance, leads = Group.objects.create(name="finance"), Group.objects.create(name="leads")
    made = dict(users)
    for name in ("alice", "bob", "carol", "dave", "erin"):
        made[name] = User.objects.create_user(name, password=name)
        made[name].groups.add(Group.objects.get(name="reviewer"))
        if name != "dave":
            made[name].groups.add(finance)
    made["erin"].groups.add(leads)
    return made


@pytest.fixture
def api(team: dict[str, User]) -> Api:
    return Api(team)


def agent_token(team: dict[str, User], agent: str) -> str:
    return ApiToken.objects.issue(team["supervisor"], name=agent, agent=agent)[1]


def ask(api: Api, token: str, amount: int, name: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"actions": [{"name": "wire", "args": {"amount": amount}}]}
    if name is not None:
        body["agent"] = {"name": name}
    response = api.client("reviewer").post("/api/requests", body,
                                           content_type="application/json",
                                           headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.content
    return dict(response.json())


def decide(api: Api, who: str, request_id: str) -> Any:
    return api.post(who, f"/api/requests/{request_id}/decision",
                    {"decisions": [{"type": "approve"}]})


def progress(api: Api, request_id: str) -> str:
    return str(api.get("auditor", f"/api/requests/{request_id}").json()["approvals"])


@override_settings(FORGE_POLICIES=PAYMENTS)
def test_a_name_does_not_bring_another_agents_rule(api: Api, team: dict[str, User]) -> None:
    assert ask(api, agent_token(team, "billing-bot"), 999)["status"] == "decided"
    impostors = [agent_token(team, "helper-bot"), api.tokens["auditor"],
                 api.tokens["reviewer"]]
    for token in impostors:
        made = ask(api, token, 999, name="billing-bot")
        assert made["status"] == "pending", token
        # The policy's requirements still hold for it: a name may add them.
        assert progress(api, made["id"]) == "0 of 2 approvals; waiting for two from finance"
    assert Interrupt.objects.filter(status="answered").count() == 1  # billing-bot's own


@override_settings(FORGE_POLICIES={**PAYMENTS, **LAX})
def test_a_name_cannot_lower_the_tokens_policy(api: Api, team: dict[str, User]) -> None:
    made = ask(api, agent_token(team, "billing-bot"), 5000, name="lax-bot")
    assert made["status"] == "pending"
    assert decide(api, "dave", made["id"]).status_code == 403  # finance only, still
    assert decide(api, "alice", made["id"]).status_code == 200
    assert progress(api, made["id"]).startswith("1 of 2 approvals: alice")
    assert decide(api, "bob", made["id"]).json()["status"] == "decided"


@override_settings(FORGE_POLICIES={**PAYMENTS, **STRICT})
def test_a_name_adds_its_policys_requirements(api: Api, team: dict[str, User]) -> None:
    made = ask(api, agent_token(team, "billing-bot"), 5, name="strict-bot")
    assert made["status"] == "pending"  # the chosen policy has no rule: people decide
    refused = decide(api, "alice", made["id"])  # finance, but not leads
    assert refused.status_code == 403 and "leads" in refused.json()["detail"]
    assert decide(api, "erin", made["id"]).status_code == 200
    assert progress(api, made["id"]).startswith("1 of 3 approvals: erin")
    assert Approval.objects.get().policy == "payments"


@override_settings(FORGE_POLICIES={
    "one": {"agents": ["billing-bot"], "approvals": 1},
    "two": {"agents": ["supervisor"], "approvals": 2}})
def test_the_strictest_of_the_tokens_policies_applies(
        api: Api, team: dict[str, User]) -> None:
    # The token names the agent and its user: both are the token's, both apply.
    made = ask(api, agent_token(team, "billing-bot"), 5)
    assert progress(api, made["id"]).startswith("0 of 2 approvals")


@override_settings(FORGE_POLICIES={"bot": {"agents": ["billing-bot"], "escalate_after_s": 60,
                                           "escalate_to": "leads"}})
def test_a_chosen_name_brings_no_escalation(api: Api, team: dict[str, User]) -> None:
    chosen = ask(api, agent_token(team, "helper-bot"), 5, name="billing-bot")
    own = ask(api, agent_token(team, "billing-bot"), 5)
    created = Interrupt.objects.get(root_thread_id=own["id"]).created_at
    escalated = deadlines.expire_interrupts(now=created + timedelta(seconds=61))
    assert [e.interrupt_id for e in escalated] == [own["interrupt_id"]]
    assert Interrupt.objects.get(root_thread_id=chosen["id"]).escalated_at is None
