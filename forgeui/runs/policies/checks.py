"""System checks: ``FORGE_POLICIES`` is read and checked when forge starts, not at the
first answer it would have governed."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from forgeui.permissions import teams
from forgeui.runs import registry
from forgeui.runs.policies.config import Policies, PolicyError, parse
from forgeui.runs.registry import BUILTIN_GRAPHS


def check_policies(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E010: the setting is unusable, with why; W010: a policy names an unknown graph;
    W011: a policy names a team ``FORGE_TEAMS`` does not declare."""
    try:
        found = parse(getattr(settings, "FORGE_POLICIES", None))
    except PolicyError as exc:
        return [checks.Error(str(exc), hint="fix FORGE_POLICIES (JSON from the environment)",
                             id="forgeui.E010")]
    unknown_teams = _unknown_teams(found)
    if registry.setting_problem(settings.FORGE_GRAPHS) is not None:
        return unknown_teams  # the graphs' own check names that; every node looks unknown
    known = {*settings.FORGE_GRAPHS, *BUILTIN_GRAPHS}
    return [*unknown_teams, *(
        checks.Warning(f"policy {policy.name!r} covers {node!r}, but no graph "
                       f"{node.partition('/')[0]!r} is registered", id="forgeui.W010")
        for policy in found.by_name.values() for node in policy.nodes
        if node.partition("/")[0] not in known)]


def _unknown_teams(found: Policies) -> list[checks.CheckMessage]:
    declared = teams.configured()
    return [checks.Warning(f"policy {policy.name!r} covers team {team!r}, which FORGE_TEAMS "
                           f"does not declare", hint=f"declared: {', '.join(declared) or '-'}",
                           id="forgeui.W011")
            for policy in found.by_name.values() for team in policy.teams
            if team not in declared]
