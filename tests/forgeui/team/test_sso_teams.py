"""Team roles from single sign-on: ``FORGE_OIDC_TEAMS`` sets them at every sign-in."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import checks
from django.test import override_settings

from forgeui.models import AuditEntry
from forgeui.permissions.roles import allowed, team_roles
from forgeui.team import sso
from forgeui.team.sso import ForgeOIDCBackend
from tests.forgeui.team.test_sso_accounts import SSO, claims, groups_of

pytestmark = pytest.mark.django_db
TEAMS = {"finance": {"graphs": ["payments"]}, "support": {"graphs": ["tickets"]}}
TEAM_MAP = {"fin-approvers": "finance:reviewer",
            "fin-leads": ["finance:supervisor", "finance:reviewer"],
            "helpdesk": "support:auditor", "approvers-everywhere": []}


@override_settings(**SSO, FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS=TEAM_MAP)
def test_team_roles_follow_the_claim_and_other_groups_stay() -> None:
    backend = ForgeOIDCBackend()
    user = backend.create_user(claims(groups=["fin-approvers", "approvers"]))
    assert groups_of(user) == ["finance:reviewer", "reviewer"]
    # Made in the admin: a group of a team no longer configured, and a plain group.
    user.groups.add(Group.objects.get_or_create(name="legal:reviewer")[0],
                    Group.objects.get_or_create(name="newsletter")[0])
    backend.update_user(user, claims(groups=["fin-leads", "helpdesk"]))
    assert groups_of(user) == ["finance:reviewer", "finance:supervisor", "legal:reviewer",
                               "newsletter", "support:auditor"]
    assert team_roles(user)["finance"] == {"reviewer", "supervisor"}
    assert allowed(user, "cancel", "finance") and not allowed(user, "cancel", "support")
    backend.update_user(user, claims(groups=["helpdesk"]))
    assert groups_of(user) == ["legal:reviewer", "newsletter", "support:auditor"]
    assert not allowed(user, "read", "finance") and allowed(user, "read", "support")
    synced = AuditEntry.objects.filter(action="sso.roles_synced").order_by("seq").last()
    assert synced is not None
    assert synced.detail == {"added": [], "removed": ["finance:reviewer", "finance:supervisor"]}


@override_settings(**SSO, FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS=TEAM_MAP)
def test_each_group_a_sign_in_changes_is_a_membership_entry_by_that_person() -> None:
    backend = ForgeOIDCBackend()
    user = backend.create_user(claims(groups=["fin-leads"]))
    backend.update_user(user, claims(groups=["approvers"]))
    found = AuditEntry.objects.filter(action__startswith="membership.").order_by("seq")
    assert [(e.action, e.detail["group"], e.team) for e in found] == [
        ("membership.added", "finance:reviewer", "finance"),
        ("membership.added", "finance:supervisor", "finance"),
        ("membership.added", "reviewer", ""),
        ("membership.removed", "finance:reviewer", "finance"),
        ("membership.removed", "finance:supervisor", "finance")]
    assert {(e.actor_id, e.sign_in) for e in found} == {(user.pk, "sso")}


@override_settings(**SSO, FORGE_TEAMS={}, FORGE_OIDC_TEAMS=TEAM_MAP)
def test_without_teams_configured_no_team_role_is_granted_or_taken() -> None:
    user = User.objects.create_user("dana")
    user.groups.add(Group.objects.get_or_create(name="finance:reviewer")[0])
    assert sso.team_roles_from_claims(claims(groups=["fin-leads"])) == frozenset()
    assert sso.sync_team_roles(user, frozenset()) == ([], [])
    assert groups_of(user) == ["finance:reviewer"]


def errors(**settings: Any) -> list[str]:
    with override_settings(**SSO, **settings):
        return [f"{e.id}: {e.msg}" for e in sso.check_settings()
                if isinstance(e, checks.CheckMessage)]


def test_the_check_names_an_unknown_team_or_role() -> None:
    assert errors(FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS=TEAM_MAP) == []
    unknown_team = errors(FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS={"x": "legal:reviewer"})
    assert unknown_team == ["forgeui.E032: FORGE_OIDC_TEAMS maps 'x' to 'legal:reviewer': "
                            "no team 'legal' in FORGE_TEAMS (teams: finance, support)"]
    unknown_role = errors(FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS={"y": ["finance:boss"]})
    assert unknown_role == ["forgeui.E032: FORGE_OIDC_TEAMS maps 'y' to 'finance:boss': "
                            "no role 'boss' (roles: reviewer, supervisor, auditor)"]
    plain = errors(FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS={"z": "reviewer"})
    assert plain == ["forgeui.E032: FORGE_OIDC_TEAMS maps 'z' to 'reviewer': "
                     "'reviewer' is not TEAM:ROLE"]
    assert errors(FORGE_TEAMS=TEAMS, FORGE_OIDC_TEAMS={"w": 3})[0].startswith(
        "forgeui.E032: FORGE_OIDC_TEAMS maps 'w' to '3'")
    with override_settings(FORGE_SSO=False, FORGE_OIDC_TEAMS={"x": "legal:reviewer"}):
        assert sso.check_settings() == []
