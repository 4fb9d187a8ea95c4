"""Teams: who owns which graphs and agents (``FORGE_TEAMS``).

``{"finance": {"graphs": ["payments", "payments/*"], "agents": ["billing-bot"]}}``: the
team owns the runs and interrupts of those graphs (a name or an ``fnmatch`` pattern) and
the requests of those agents (the name their token carries, never one the agent gives
itself). A graph or agent no team names is owned by nobody: only holders of plain roles
see it. A team is stamped on each row when the row is made, so a query filters on one
indexed column; ``manage.py assign_teams`` re-stamps rows after the setting changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from django.conf import settings
from django.core import checks

# Team names become group names ("finance:reviewer") and URL-safe labels.
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
KEYS = frozenset({"graphs", "agents", "label"})
NO_TEAM = ""


class TeamsError(ValueError):
    """``FORGE_TEAMS`` cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Team:
    name: str
    graphs: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    label: str = ""

    def owns_graph(self, graph: str) -> bool:
        return any(fnmatchcase(graph, pattern) for pattern in self.graphs)

    def owns_agent(self, agent: str) -> bool:
        return any(fnmatchcase(agent, pattern) for pattern in self.agents)


def parse(raw: Any) -> dict[str, Team]:
    """The teams ``raw`` declares; ``TeamsError`` naming the first thing wrong."""
    if raw in (None, ""):
        return {}
    if not isinstance(raw, dict):
        raise TeamsError(f"FORGE_TEAMS must be a JSON object of teams, not {raw!r:.80}")
    found = {}
    for name, spec in raw.items():
        if not isinstance(name, str) or not NAME.match(name):
            raise TeamsError(f"team name {name!r} must be lower-case letters, digits, '-' "
                             "or '_' (it becomes the group 'NAME:reviewer')")
        if not isinstance(spec, dict) or set(spec) - KEYS:
            raise TeamsError(f"team {name!r} must be an object with \"graphs\" and/or "
                             f"\"agents\" lists, not {spec!r:.80}")
        lists = {key: spec.get(key) or [] for key in ("graphs", "agents")}
        for key, names in lists.items():
            if not isinstance(names, list) or not all(
                    isinstance(n, str) and n for n in names):
                raise TeamsError(f"team {name!r}: {key!r} must be a list of names")
        found[name] = Team(name, tuple(lists["graphs"]), tuple(lists["agents"]),
                           str(spec.get("label") or name))
    _refuse_shared(found)
    return found


def _refuse_shared(found: dict[str, Team]) -> None:
    """A name two teams claim would belong to whichever was declared first: refused."""
    for key in ("graphs", "agents"):
        owner: dict[str, str] = {}
        for team in found.values():
            for name in getattr(team, key):
                if name in owner and owner[name] != team.name:
                    raise TeamsError(f"{key[:-1]} {name!r} is claimed by both teams "
                                     f"{owner[name]!r} and {team.name!r}")
                owner[name] = team.name


def configured() -> dict[str, Team]:
    """The teams of the current setting ({} when it is unusable: the check names why).
    Asked at every save, so the setting is parsed once per value it takes."""
    global _last
    raw = getattr(settings, "FORGE_TEAMS", None)
    if _last is None or _last[0] is not raw:
        try:
            _last = raw, parse(raw)
        except TeamsError:
            _last = raw, {}
    return _last[1]


# The setting's value last read, and its teams: a new value (a test's override) is a new
# object, parsed again.
_last: tuple[Any, dict[str, Team]] | None = None


def enabled() -> bool:
    return bool(configured())


def team_of_graph(graph: str) -> str:
    """The team owning ``graph``'s runs; ``NO_TEAM`` when none does."""
    for team in configured().values():
        if team.owns_graph(graph):
            return team.name
    return NO_TEAM


def team_of_agent(agent: str) -> str:
    """The team owning the requests of the agent its token names; ``NO_TEAM`` if none."""
    if not agent:
        return NO_TEAM
    for team in configured().values():
        if team.owns_agent(agent):
            return team.name
    return NO_TEAM


def split_group(name: str) -> tuple[str, str] | None:
    """``"finance:reviewer"`` -> ``("finance", "reviewer")``; None for any other name."""
    team, sep, role = name.partition(":")
    if not sep or not NAME.match(team) or not role:
        return None
    return team, role


def check_teams(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E050: ``FORGE_TEAMS`` is unusable, with why."""
    try:
        parse(getattr(settings, "FORGE_TEAMS", None))
    except TeamsError as exc:
        return [checks.Error(str(exc), hint="fix FORGE_TEAMS (JSON from the environment)",
                             id="forgeui.E050")]
    return []
