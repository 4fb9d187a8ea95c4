"""Who sees what, as a property: random teams, memberships and rows; every list agrees
with one plain reference.

Each example declares which team owns each graph and agent (or none), makes runs,
interrupts, requests and audit entries stamped as the store stamps them, and one person
with random plain and team roles. Every list (``/api/runs``, ``/api/interrupts``,
``/api/audit``, each request, the inbox page) must show exactly the rows ``may_read``
says, no more, no fewer.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forgeui.models import AgentRequest, AuditEntry, Interrupt, Run
from forgeui.requests.graph import GRAPH as REQUEST_GRAPH

pytestmark = pytest.mark.django_db

TEAM_NAMES = ("finance", "support", "ops")
GRAPHS = ("transfer", "deploy", "custom", "signoff")
AGENTS = ("billing-bot", "helpdesk-bot", "stray-bot")
ROLES = ("reviewer", "supervisor", "auditor")
GROUPS = (*ROLES, *(f"{team}:{role}" for team in TEAM_NAMES for role in ROLES),
          "newsletter", "finance:nonsense")
ROW = re.compile(r'<tr id="int-([0-9a-f]+)" class="row')


def may_read(groups: frozenset[str], superuser: bool, team: str) -> bool:
    """The reference: superusers and plain roles read everything; a team role reads its
    team's rows; a row no team owns is for plain roles only."""
    if superuser or any(group in ROLES for group in groups):
        return True
    return any(group == f"{team}:{role}" for group in groups for role in ROLES if team)


def reads_anything(groups: frozenset[str], superuser: bool) -> bool:
    """Whether the lists answer at all (a person with no role at all is refused)."""
    return superuser or any(g in ROLES or g.partition(":")[2] in ROLES for g in groups)


owners = st.sampled_from((*TEAM_NAMES, None))
worlds = st.fixed_dictionaries({
    "graphs": st.fixed_dictionaries({graph: owners for graph in GRAPHS}),
    "agents": st.fixed_dictionaries({agent: owners for agent in AGENTS}),
    "runs": st.lists(st.tuples(st.sampled_from(GRAPHS), st.booleans()), max_size=8),
    "requests": st.lists(st.sampled_from(AGENTS), max_size=4),
    "entries": st.lists(st.sampled_from((*TEAM_NAMES, "")), max_size=6),
    "groups": st.frozensets(st.sampled_from(GROUPS), max_size=4),
    "superuser": st.booleans(),
})


def teams_setting(world: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    found: dict[str, dict[str, list[str]]] = {}
    for key in ("graphs", "agents"):
        for name, owner in world[key].items():
            if owner is not None:
                found.setdefault(owner, {"graphs": [], "agents": []})[key].append(name)
    return found


def make_run(graph: str, team: str, pending: bool, run_id: str = "") -> tuple[str, str]:
    """A run paused at (or past) one interrupt, stamped with ``team``: (run, interrupt)."""
    run_id = run_id or uuid.uuid4().hex
    Run.objects.create(run_id=run_id, thread_id=run_id, root_thread_id=run_id, graph=graph,
                       namespace=[graph], status="interrupted" if pending else "completed",
                       latest_checkpoint_id=f"cp-{run_id}", team=team)
    interrupt = uuid.uuid4().hex
    Interrupt.objects.create(id=interrupt, run_id=run_id, thread_id=run_id,
                             root_thread_id=run_id, node="ask", task_id="t",
                             namespace=[graph], checkpoint_id=f"cp-{run_id}", team=team,
                             payload={"question": "Approve?", "title": "Approve?",
                                      "calls": []},
                             status="pending" if pending else "answered")
    return run_id, interrupt


def build(world: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The rows, each with its team: {"runs"|"interrupts"|"pending"|"requests"|"entries"}."""
    rows: dict[str, dict[str, str]] = {k: {} for k in ("runs", "interrupts", "pending",
                                                        "requests")}
    for graph, pending in world["runs"]:
        team = world["graphs"][graph] or ""
        run, interrupt = make_run(graph, team, pending)
        rows["runs"][run], rows["interrupts"][interrupt] = team, team
        if pending:
            rows["pending"][interrupt] = team
    for agent in world["requests"]:
        team, asked = world["agents"][agent] or "", uuid.uuid4().hex
        AgentRequest.objects.create(id=asked, agent="any-name", token_agent=agent, team=team)
        run, interrupt = make_run(REQUEST_GRAPH, team, True, run_id=asked)
        rows["requests"][asked] = rows["runs"][run] = team
        rows["interrupts"][interrupt] = rows["pending"][interrupt] = team
    for team in world["entries"]:
        AuditEntry.objects.create(action="prop.entry", team=team)
    return rows


def person(world: dict[str, Any]) -> Client:
    user = User.objects.create_user(f"p-{uuid.uuid4().hex[:8]}",
                                    is_superuser=world["superuser"])
    user.groups.add(*[Group.objects.get_or_create(name=g)[0] for g in world["groups"]])
    client = Client()
    client.force_login(user)
    return client


def listed(client: Client, url: str, key: str) -> set[str] | int:
    """The ids a list shows, or its status when it refuses."""
    response = client.get(url)
    if response.status_code != 200:
        return response.status_code
    return {str(item[key]) for item in response.json()["items"]}


def expected(rows: dict[str, str], world: dict[str, Any]) -> set[str]:
    return {row for row, team in rows.items()
            if may_read(world["groups"], world["superuser"], team)}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow], deadline=None,
          report_multiple_bugs=False)
@given(world=worlds)
def test_every_list_shows_exactly_what_the_reference_allows(world: dict[str, Any]) -> None:
    with transaction.atomic(), override_settings(FORGE_TEAMS=teams_setting(world)):
        rows = build(world)
        client = person(world)
        entries = {str(e.pk): e.team for e in AuditEntry.objects.all()}
        check(client, world, rows, entries)
        transaction.set_rollback(True)


def check(client: Client, world: dict[str, Any], rows: dict[str, dict[str, str]],
          entries: dict[str, str]) -> None:
    if not reads_anything(world["groups"], world["superuser"]):
        for url in ("/api/runs", "/api/interrupts", "/api/audit", "/"):
            assert client.get(url).status_code == 403, url
        return
    assert listed(client, "/api/runs?limit=100", "run_id") == expected(rows["runs"], world)
    assert listed(client, "/api/interrupts?limit=100", "id") == \
        expected(rows["interrupts"], world)
    assert listed(client, "/api/interrupts?status=pending&limit=100", "id") == \
        expected(rows["pending"], world)
    assert listed(client, "/api/audit?limit=200", "id") == expected(entries, world)
    inbox = client.get("/")
    assert inbox.status_code == 200
    assert set(ROW.findall(inbox.content.decode())) == expected(rows["pending"], world)
    found = {asked for asked in rows["requests"]
             if client.get(f"/api/requests/{asked}").status_code == 200}
    assert found == expected(rows["requests"], world)
