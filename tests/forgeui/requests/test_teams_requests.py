"""Agent requests and teams: a request lands in its token agent's team whatever name the
agent gives itself; other teams' people find no such request (object, decision, long
poll); sensitive args are masked for who may not answer, and checked when sent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import AgentRequest, ApiToken, AuditEntry, Interrupt
from forgeui.requests import mcp_server, service, shapes
from forgeui.runs.exceptions import InvalidRequest, NotFound
from forgeui.team.sensitive import MASK
from tests.forgeui.api.teams_site import IBAN, Site, site_fixture  # noqa: F401
from tests.forgeui.requests.test_access import long_poll
from tests.forgeui.requests.test_mcp_tools import call as call_tool

pytestmark = pytest.mark.django_db(transaction=True)

PAY = {"name": "pay", "args": {"to": {"iban": IBAN, "name": "Acme"}, "amount": 9},
       "sensitive": ["iban"]}


def agent(name: str) -> str:
    return ApiToken.objects.issue(User.objects.create_user(f"agent:{name}"), name="t",
                                  agent=name)[1]


def call(token: str, method: str, path: str, body: Any = None) -> Any:
    client = Client(headers={"Authorization": f"Bearer {token}"})
    if method == "GET":
        return client.get(path)
    return client.post(path, body, content_type="application/json")


def ask(token: str, **fields: Any) -> dict[str, Any]:
    made = call(token, "POST", "/api/requests", {"actions": [PAY], **fields})
    assert made.status_code == 201, made.content
    return made.json()


def test_a_name_the_agent_gives_itself_does_not_move_its_team(site: Site) -> None:
    billing = agent("billing-bot")
    made = ask(billing, agent={"name": "help-bot"})
    row = AgentRequest.objects.get(pk=made["id"])
    assert (row.agent, row.token_agent, row.team) == ("help-bot", "billing-bot", "finance")
    assert Interrupt.objects.get(root_thread_id=made["id"]).team == "finance"
    assert AuditEntry.objects.get(action="request.create").team == "finance"
    assert made["id"] in site.api.get("fin_auditor", "/api/interrupts").content.decode()
    assert made["id"] not in site.api.get("sup_reviewer", "/api/interrupts").content.decode()
    unowned = ask(agent("stray-bot"), agent={"name": "billing-bot"})
    assert AgentRequest.objects.get(pk=unowned["id"]).team == ""


def test_another_teams_request_is_404_on_every_route(site: Site) -> None:
    made = ask(agent("billing-bot"))
    path = f"/api/requests/{made['id']}"
    decision = {"decisions": [{"type": "approve"}]}
    for who in ("sup_reviewer", "sup_supervisor"):
        token = site.api.tokens[who]
        for response in (call(token, "GET", path),
                         call(token, "POST", f"{path}/decision", decision)):
            assert response.status_code == 404, (who, response.content)
            assert made["id"] in response.json()["detail"]
        polled = long_poll(f"{path}?wait=1", token)
        assert polled.status_code == 404 and IBAN not in polled.text
    assert call(site.api.tokens["fin_auditor"], "GET", path).status_code == 200
    refused = call(site.api.tokens["fin_auditor"], "POST", f"{path}/decision", decision)
    assert refused.status_code == 403
    decided = call(site.api.tokens["fin_reviewer"], "POST", f"{path}/decision", decision)
    assert decided.status_code == 200 and decided.json()["status"] == "decided"


def test_sensitive_args_are_whole_only_for_who_may_answer_and_the_asking_agent(
        site: Site) -> None:
    billing = agent("billing-bot")
    made = ask(billing)
    path = f"/api/requests/{made['id']}"
    assert made["actions"][0]["args"]["to"]["iban"] == IBAN  # the agent reads what it sent
    for who in ("fin_auditor", "auditor"):
        shown = call(site.api.tokens[who], "GET", path).json()
        assert shown["actions"][0]["args"]["to"] == {"iban": MASK, "name": "Acme"}, who
        listed = site.api.get(who, "/api/interrupts").content.decode()
        assert IBAN not in listed and made["id"] in listed
    for who in ("fin_reviewer", "reviewer"):
        shown = call(site.api.tokens[who], "GET", path).json()
        assert shown["actions"][0]["args"]["to"]["iban"] == IBAN, who
    assert call(billing, "GET", path).json()["actions"][0]["args"]["to"]["iban"] == IBAN
    assert Interrupt.objects.get(root_thread_id=made["id"]).sensitive == ["iban"]


@pytest.mark.parametrize("sensitive", ["iban", [1], [""], ["k"] * 65, ["x" * 201]])
def test_sensitive_must_be_a_short_list_of_names(site: Site, sensitive: Any) -> None:
    body = {"actions": [{**PAY, "sensitive": sensitive}]}
    refused = call(agent("billing-bot"), "POST", "/api/requests", body)
    assert refused.status_code == 422, refused.content
    with pytest.raises(InvalidRequest) as caught:  # as an MCP call, without the API's schema
        shapes.check_actions(body["actions"])
    assert caught.value.loc == ["body", "actions", 0, "sensitive"]


def test_sensitive_keys_of_all_actions_together_are_at_most_64() -> None:
    actions = [{"name": f"a{i}", "sensitive": [f"k{i}-{j}" for j in range(40)]}
               for i in range(2)]
    shapes.check_actions(actions)
    with pytest.raises(InvalidRequest, match="at most 64"):
        shapes.sensitive_keys(actions)
    assert shapes.sensitive_keys([{"sensitive": ["a", "b"]}, {"sensitive": ["b", "c"]},
                                  {}]) == ["a", "b", "c"]


def test_an_mcp_call_lands_in_its_agents_team(site: Site, settings: Any) -> None:
    settings.FORGE_MCP_PROGRESS_SECONDS = 0.2
    srv = mcp_server.build(fixed=service.agent_for_token(agent("billing-bot")), recheck_s=0.1)
    approve = [{"type": "approve"}]
    users = site.api.users

    async def asked() -> AgentRequest:
        for _ in range(200):
            found = await sync_to_async(AgentRequest.objects.first)()
            if found is not None:
                return found
            await asyncio.sleep(0.05)
        raise AssertionError("no request was made")

    async def scenario() -> str:
        waiting = asyncio.create_task(call_tool(srv, "request_approval", {
            "tool_name": "Bash", "input": {"command": "pay"}}))
        row = await asked()
        assert row.team == "finance"
        with pytest.raises(NotFound):
            await sync_to_async(service.decide)(users["sup_reviewer"], row.id, approve)
        await sync_to_async(service.decide)(users["fin_reviewer"], row.id, approve)
        return str((await waiting).content[0].text)

    assert json.loads(async_to_sync(scenario)())["behavior"] == "allow"
