"""``FORGE_TEAMS``: what it may say, who owns what, who may do what where."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, Group, User
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from forgeui.apps import SETTINGS_CHECKS
from forgeui.models import AgentRequest, AuditEntry, Interrupt, Run
from forgeui.permissions import teams
from forgeui.permissions.roles import Action, allowed, team_q, teams_where
from forgeui.requests.graph import GRAPH as REQUEST_GRAPH
from forgeui.team import sso
from tests.docblocks import block

TEAMS = {"finance": {"graphs": ["payments", "payments/*"], "agents": ["billing-*"]},
         "support": {"graphs": ["tickets"], "agents": ["helpdesk-bot"], "label": "Support"}}


@pytest.mark.parametrize(("raw", "message"), [
    ([], "FORGE_TEAMS must be a JSON object of teams, not []"),
    ("finance", "FORGE_TEAMS must be a JSON object of teams, not 'finance'"),
    ({"Finance": {}}, "team name 'Finance' must be lower-case letters"),
    ({"fin:ance": {}}, "team name 'fin:ance' must be lower-case letters"),
    ({"finance": ["payments"]}, "team 'finance' must be an object"),
    ({"finance": {"graph": ["payments"]}}, "team 'finance' must be an object"),
    ({"finance": {"graphs": "payments"}}, "team 'finance': 'graphs' must be a list of names"),
    ({"finance": {"agents": [""]}}, "team 'finance': 'agents' must be a list of names"),
    ({"finance": {"graphs": ["a"]}, "support": {"graphs": ["b", "a"]}},
     "graph 'a' is claimed by both teams 'finance' and 'support'"),
    ({"finance": {"agents": ["bot"]}, "ops": {"agents": ["bot"]}},
     "agent 'bot' is claimed by both teams 'finance' and 'ops'"),
])
def test_a_bad_setting_is_named_by_e050_and_owns_nothing(raw: Any, message: str) -> None:
    with pytest.raises(teams.TeamsError, match="^" + re.escape(message)):
        teams.parse(raw)
    with override_settings(FORGE_TEAMS=raw):
        (error,) = teams.check_teams()
        assert error.id == "forgeui.E050" and error.msg.startswith(message)
        assert teams.configured() == {} and not teams.enabled()
        assert teams.team_of_graph("payments") == teams.NO_TEAM


def test_the_system_check_command_reports_e050() -> None:
    with override_settings(FORGE_TEAMS={"finance": {"graphs": "payments"}}), \
            pytest.raises(SystemCheckError, match=r"forgeui\.E050"):
        call_command("check", tags=[SETTINGS_CHECKS], stdout=io.StringIO())


def test_a_good_setting_passes_and_names_owners_by_pattern() -> None:
    assert teams.parse(None) == {} and teams.parse("") == {}
    with override_settings(FORGE_TEAMS=TEAMS):
        assert teams.check_teams() == []
        assert teams.enabled() and teams.configured()["support"].label == "Support"
        assert teams.configured()["finance"].label == "finance"
        assert [teams.team_of_graph(g) for g in ("payments", "payments/refunds",
                                                 "payments-v2", "tickets", "other")] == \
            ["finance", "finance", "", "support", ""]
        assert [teams.team_of_agent(a) for a in ("billing-bot", "billing", "helpdesk-bot",
                                                 "", "HELPDESK-BOT")] == \
            ["finance", "", "support", "", ""]
    with override_settings(FORGE_TEAMS={}):
        assert not teams.enabled() and teams.team_of_graph("payments") == ""


def test_group_names_split_into_team_and_role() -> None:
    assert teams.split_group("finance:reviewer") == ("finance", "reviewer")
    assert teams.split_group("finance:x:y") == ("finance", "x:y")
    for name in ("reviewer", ":reviewer", "finance:", "Finance:reviewer", "agent :x"):
        assert teams.split_group(name) is None, name


def person(name: str, *groups: str, **flags: Any) -> User:
    user = User.objects.create_user(name, **flags)
    user.groups.add(*[Group.objects.get_or_create(name=g)[0] for g in groups])
    return user


@pytest.mark.django_db
def test_plain_roles_hold_everywhere_and_team_roles_in_their_team_only() -> None:
    plain = person("plain", "reviewer")
    fin = person("fin", "finance:reviewer", "support:auditor", "finance:nonsense")
    boss = person("boss", is_superuser=True)
    idle = person("idle", "finance:reviewer", is_active=False)
    assert teams_where(plain, "read") is None and teams_where(plain, "cancel") == frozenset()
    assert teams_where(fin, "read") == {"finance", "support"}
    assert teams_where(fin, Action.ANSWER) == {"finance"}
    assert teams_where(fin, "cancel") == frozenset()
    assert teams_where(boss, "cancel") is None and teams_where(None, "cancel") is None
    assert teams_where(AnonymousUser()) == frozenset() and teams_where(idle) == frozenset()
    assert allowed(fin, "answer", "finance") and not allowed(fin, "answer", "support")
    assert not allowed(fin, "read", "") and allowed(plain, "answer", "")
    assert allowed(fin, "answer") and not allowed(fin, "cancel")  # anywhere at all
    assert not allowed(plain, "cancel", "finance") and not allowed(idle, "read", "finance")


@pytest.mark.django_db
def test_team_q_filters_rows_by_their_team_column() -> None:
    for n, team in enumerate(["finance", "support", "", "finance"]):
        Run.objects.create(run_id=f"r{n}", thread_id=f"t{n}", root_thread_id=f"t{n}",
                           graph="g", status="interrupted", latest_checkpoint_id="c",
                           team=team)
    fin = person("fin", "finance:reviewer", "support:auditor")

    def visible(user: Any, action: str = "read") -> list[str]:
        return sorted(Run.objects.filter(team_q(user, action)).values_list("run_id", flat=True))

    assert visible(fin) == ["r0", "r1", "r3"]
    assert visible(fin, "answer") == ["r0", "r3"]
    assert visible(fin, "cancel") == []
    assert visible(person("plain", "auditor")) == ["r0", "r1", "r2", "r3"]
    assert visible(AnonymousUser()) == []
    assert visible(None, "cancel") == ["r0", "r1", "r2", "r3"]
    assert sorted(Run.objects.visible_to(fin, "answer").values_list("run_id", flat=True)) == \
        ["r0", "r3"]
    field_q = team_q(fin, "answer", field="run__team")
    assert "run__team__in" in str(field_q)


def seed_rows() -> None:
    for n, graph in enumerate(["payments", "payments/refunds", "tickets", "other"]):
        Run.objects.create(run_id=f"r{n}", thread_id=f"t{n}", root_thread_id=f"t{n}",
                           graph=graph, status="interrupted", latest_checkpoint_id="c")
        Interrupt.objects.create(id=f"i{n}", run_id=f"r{n}", thread_id=f"t{n}",
                                 root_thread_id=f"t{n}", node="n", task_id="k",
                                 checkpoint_id="c")
    for n, agent in enumerate(["billing-bot", "helpdesk-bot"]):
        AgentRequest.objects.create(id=f"q{n}", agent="anything", token_agent=agent)
        Run.objects.create(run_id=f"q{n}", thread_id=f"q{n}", root_thread_id=f"q{n}",
                           graph=REQUEST_GRAPH, status="interrupted", latest_checkpoint_id="c")
        Interrupt.objects.create(id=f"qi{n}", run_id=f"q{n}", thread_id=f"q{n}",
                                 root_thread_id=f"q{n}", node="ask", task_id="k",
                                 checkpoint_id="c")


def teams_of(model: Any) -> dict[str, str]:
    return dict(model.objects.values_list("pk", "team"))


@pytest.mark.django_db
def test_assign_teams_moves_rows_to_the_teams_the_setting_names_now() -> None:
    with override_settings(FORGE_TEAMS={}):
        seed_rows()
    assert set(teams_of(Run).values()) == {""}
    with override_settings(FORGE_TEAMS=TEAMS):
        out = io.StringIO()
        call_command("assign_teams", "--dry-run", stdout=out)
        assert out.getvalue() == "12 rows would move\n"
        assert set(teams_of(Run).values()) == {""}
        assert not AuditEntry.objects.filter(action="teams.assign").exists()
        call_command("assign_teams", stdout=out)
        assert out.getvalue().endswith("12 rows moved\n")
    assert teams_of(Run) == {"r0": "finance", "r1": "finance", "r2": "support", "r3": "",
                             "q0": "finance", "q1": "support"}
    assert teams_of(Interrupt) == {"i0": "finance", "i1": "finance", "i2": "support",
                                   "i3": "", "qi0": "finance", "qi1": "support"}
    assert teams_of(AgentRequest) == {"q0": "finance", "q1": "support"}
    assert AuditEntry.objects.get(action="teams.assign").detail == {"rows": 12}
    with override_settings(FORGE_TEAMS={"support": TEAMS["support"]}):
        out = io.StringIO()
        call_command("assign_teams", stdout=out)
        assert out.getvalue() == "7 rows moved\n"  # finance's rows belong to nobody now
    assert teams_of(Run)["r0"] == "" and teams_of(Interrupt)["qi1"] == "support"


def test_the_documented_settings_are_accepted() -> None:
    declared = block("docs/teams.md", "export FORGE_TEAMS=", "sh")
    setting = json.loads(declared.partition("'")[2].rpartition("'")[0])
    assert sorted(teams.parse(setting)) == ["finance", "support"]
    mapped = block("docs/teams.md", "export FORGE_OIDC_TEAMS=", "sh")
    oidc = json.loads(mapped.partition("'")[2].rpartition("'")[0])
    with override_settings(FORGE_SSO=True, FORGE_OIDC_ISSUER="https://id.example.com",
                           FORGE_OIDC_ROLES={}, FORGE_TEAMS=setting, FORGE_OIDC_TEAMS=oidc):
        assert sso.check_settings() == []
