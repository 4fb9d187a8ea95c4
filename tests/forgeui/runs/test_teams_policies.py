"""Policies that name teams: a team's policy covers its interrupts that no node's or
agent's policy covers, only people who answer in that team count, a team role counts as
the role for the policy's ``roles``, and the system check names an undeclared team."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks

from forgeui.models import Interrupt
from forgeui.runs.policies import approvals
from forgeui.runs.policies.checks import check_policies
from forgeui.runs.policies.config import PolicyError, parse
from tests.forgeui.api.teams_site import Site, site_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def resume(site: Site, who: str, graph: str) -> Any:
    return site.api.post(who, f"/api/interrupts/{site.of(graph)}/resume", {"value": True})


def test_a_teams_policy_covers_that_teams_interrupts_only(site: Site, settings: Any) -> None:
    settings.FORGE_POLICIES = {"finance-two": {"teams": ["finance"], "approvals": 2}}
    first = resume(site, "fin_reviewer", "payout")
    assert first.status_code == 202 and first.json()["status"] == "approval_recorded"
    assert first.json()["approvals"].startswith("1 of 2 approvals: fin_reviewer")
    assert resume(site, "reviewer", "payout").json()["status"] == "accepted"
    assert resume(site, "sup_reviewer", "ticket").json()["status"] == "accepted"
    assert resume(site, "reviewer", "deploy").json()["status"] == "accepted"
    assert Interrupt.objects.filter(status="pending").count() == 0


def test_a_nodes_policy_comes_before_its_teams(site: Site, settings: Any) -> None:
    settings.FORGE_POLICIES = {"finance-two": {"teams": ["finance"], "approvals": 2},
                               "payout-one": {"nodes": ["payout/ask"], "approvals": 1}}
    interrupt = Interrupt.objects.select_related("run").get(pk=site.of("payout"))
    policy = approvals.policy_for(interrupt)
    assert policy is not None and policy.name == "payout-one"
    assert resume(site, "fin_reviewer", "payout").json()["status"] == "accepted"


def test_a_role_held_in_the_team_counts_for_the_policys_roles(site: Site,
                                                              settings: Any) -> None:
    settings.FORGE_POLICIES = {"finance-leads": {"teams": ["finance"],
                                                 "roles": ["supervisor"]}}
    refused = resume(site, "fin_reviewer", "payout")
    assert refused.status_code == 403 and "a supervisor" in refused.json()["detail"]
    assert resume(site, "fin_supervisor", "payout").json()["status"] == "accepted"


def test_only_people_who_answer_in_the_team_may_count(site: Site, settings: Any) -> None:
    settings.FORGE_POLICIES = {"finance-approvers": {"teams": ["finance"],
                                                     "groups": ["approvers"]}}
    interrupt = Interrupt.objects.select_related("run").get(pk=site.of("payout"))
    policy = approvals.policy_for(interrupt)
    assert policy is not None
    outsider = approvals.Person(99, "sam", frozenset({"approvers", "support:reviewer"}), False)
    reason = approvals.why_not_counted(policy, outsider, interrupt, starters=set())
    assert reason is not None and "team finance" in reason
    member = approvals.Person(98, "fay", frozenset({"approvers", "finance:reviewer"}), False)
    assert approvals.why_not_counted(policy, member, interrupt, starters=set()) is None


def test_the_check_names_a_team_forge_teams_does_not_declare(site: Site,
                                                             settings: Any) -> None:
    settings.FORGE_POLICIES = {"ops": {"teams": ["ops", "finance"]}}
    found = check_policies()
    assert [(m.id, m.level) for m in found] == [("forgeui.W011", checks.WARNING)]
    assert "'ops'" in found[0].msg and "finance" in (found[0].hint or "")
    settings.FORGE_POLICIES = {"fin": {"teams": ["finance"]}}
    assert check_policies() == []


def test_a_team_belongs_to_one_policy_and_a_teams_policy_covers_something() -> None:
    with pytest.raises(PolicyError, match="team 'finance' is in both"):
        parse({"a": {"teams": ["finance"]}, "b": {"teams": ["finance"]}})
    with pytest.raises(PolicyError, match="teams: a list of names"):
        parse({"a": {"teams": "finance"}})
    assert parse({"a": {"teams": ["finance"]}}).for_team("finance") is not None
    assert parse({"a": {"teams": ["finance"]}}).for_team("") is None
