"""System checks: ``FORGE_POLICIES`` is read and checked when forge starts, not at the
first answer it would have governed."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from forgeui.runs import registry
from forgeui.runs.policies.config import PolicyError, parse
from forgeui.runs.registry import BUILTIN_GRAPHS


def check_policies(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E010: the setting is unusable, with why; W010: a policy names an unknown graph."""
    try:
        found = parse(getattr(settings, "FORGE_POLICIES", None))
    except PolicyError as exc:
        return [checks.Error(str(exc), hint="fix FORGE_POLICIES (JSON from the environment)",
                             id="forgeui.E010")]
    if registry.setting_problem(settings.FORGE_GRAPHS) is not None:
        return []  # the graphs' own check names that; every node would look unknown
    known = {*settings.FORGE_GRAPHS, *BUILTIN_GRAPHS}
    return [checks.Warning(f"policy {policy.name!r} covers {node!r}, but no graph "
                           f"{node.partition('/')[0]!r} is registered", id="forgeui.W010")
            for policy in found.by_name.values() for node in policy.nodes
            if node.partition("/")[0] not in known]
