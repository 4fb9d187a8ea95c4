"""Rows carry the team that owns them, stamped by the store as they are made."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from forgeui.models import AgentRequest, AuditEntry, Interrupt, Run
from forgeui.permissions import teams
from forgeui.requests import service
from forgeui.requests.service import Caller
from forgeui.runs import registry
from forgeui.store import DjangoCheckpointStore

pytestmark = pytest.mark.django_db(transaction=True)

TEAMS = {"finance": {"graphs": ["transfer"], "agents": ["billing-*"]},
         "ops": {"graphs": ["nest*"]}}


async def run(graph: str, payload: Any) -> str:
    executor = registry.get_executor(graph).with_store(DjangoCheckpointStore())
    return (await executor.run(payload)).thread_id


@override_settings(FORGE_TEAMS=TEAMS)
async def test_runs_and_their_interrupts_take_their_graphs_team() -> None:
    finance, ops, nobody = (await run("transfer", {"amount": 5}), await run("nested", {"case": 1}),
                            await run("deploy", {"service": "api"}))
    teams_of = {thread: {r.team async for r in Run.objects.of_tree(thread)}
                for thread in (finance, ops, nobody)}
    assert teams_of == {finance: {"finance"}, ops: {"ops"}, nobody: {""}}  # sub-agents too
    interrupts = {thread: {i.team async for i in Interrupt.objects.of_tree(thread)}
                  for thread in (finance, ops, nobody)}
    assert interrupts == {finance: {"finance"}, ops: {"ops"}, nobody: {""}}


@override_settings(FORGE_TEAMS=TEAMS)
def test_a_request_takes_its_token_agents_team_not_the_name_it_gives(
        django_user_model: Any) -> None:
    owner = django_user_model.objects.create_user("agent:billing-bot")
    body = {"actions": [{"name": "pay", "args": {"amount": 5}}],
            "agent": {"name": "deploy-bot"}}
    made = service.create(Caller(owner, "billing-bot"), body).row
    stray = service.create(Caller(owner, "stray"), {**body, "agent": {"name": "billing-x"}}).row
    assert (made.team, stray.team) == ("finance", "")
    assert Run.objects.get(pk=made.id).team == "finance"
    assert Interrupt.objects.get(run_id=made.id).team == "finance"
    assert Interrupt.objects.get(run_id=stray.id).team == ""
    assert AuditEntry.objects.get(action="request.create", run_id=made.id).team == "finance"
    assert AgentRequest.objects.filter(team="finance").count() == 1


def test_without_teams_every_row_is_owned_by_none() -> None:
    assert not teams.enabled()
    assert teams.team_of_graph("transfer") == teams.NO_TEAM
