"""Who may do what: the one table of roles (Django groups) and actions.

- ``reviewer``: answer interrupts, add steering notes, fork a thread into a new branch.
- ``supervisor``: also targeted resume of sub-agents, cancel, start runs, recover failed
  runs, and assign interrupts (or release anyone's claim).
- ``auditor``: read everything, change nothing.

Every role may read. Superusers may do everything; ``user=None`` is a management command
(trusted code, not a person) and may too. The services and the API both ask ``allowed``.

A role is held everywhere (the group ``reviewer``) or in one team (``finance:reviewer``,
``forgeui.permissions.teams``). A role held everywhere covers every team's objects and those no
team owns; a team's role covers that team's objects only. ``allowed(user, action, team)``
asks about one object's team; without ``team`` it asks whether the user may do ``action``
anywhere at all (to show a menu, never to act on an object).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from django.db.models import Q


class Role(StrEnum):
    REVIEWER = "reviewer"
    SUPERVISOR = "supervisor"
    AUDITOR = "auditor"


ROLE_NAMES = frozenset(role.value for role in Role)


class Action(StrEnum):
    READ = "read"
    ANSWER = "answer"
    STEER = "steer"
    START_RUN = "start_run"
    RESUME_TARGETED = "resume_targeted"
    FORK = "fork"
    CANCEL = "cancel"
    RECOVER = "recover"
    ASSIGN = "assign"


PERMISSIONS: dict[Action, frozenset[Role]] = {
    Action.READ: frozenset(Role),
    Action.ANSWER: frozenset({Role.REVIEWER, Role.SUPERVISOR}),
    Action.STEER: frozenset({Role.REVIEWER, Role.SUPERVISOR}),
    Action.START_RUN: frozenset({Role.SUPERVISOR}),
    Action.RESUME_TARGETED: frozenset({Role.SUPERVISOR}),
    Action.FORK: frozenset({Role.REVIEWER, Role.SUPERVISOR}),
    Action.CANCEL: frozenset({Role.SUPERVISOR}),
    Action.RECOVER: frozenset({Role.SUPERVISOR}),
    Action.ASSIGN: frozenset({Role.SUPERVISOR}),
}


def groups_of(user: Any) -> frozenset[str]:
    """The names of all the user's groups, cached on the user object (one query per
    request, shared by the roles, the assignment rules and approval policies)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_forge_groups", None)
    if cached is None:
        cached = user._forge_groups = frozenset(user.groups.values_list("name", flat=True))
    return cached


def remember_groups(user: Any, names: Iterable[str]) -> None:
    """Give ``groups_of`` the group names a query already read with ``user``."""
    user._forge_groups = frozenset(names)


def roles_of(user: Any) -> frozenset[Role]:
    """The user's forge roles, cached on the user object (one query per request)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_forge_roles", None)
    if cached is None:
        cached = user._forge_roles = frozenset(
            Role(name) for name in groups_of(user) if name in ROLE_NAMES)
    return cached


def team_roles(user: Any) -> dict[str, frozenset[Role]]:
    """The roles ``user`` holds in each team (groups named ``team:role``), cached."""
    if user is None or not getattr(user, "is_authenticated", False):
        return {}
    cached = getattr(user, "_forge_team_roles", None)
    if cached is None:
        found: dict[str, set[Role]] = {}
        for name in groups_of(user):
            team, sep, role = name.partition(":")
            if sep and team and role in ROLE_NAMES:
                found.setdefault(team, set()).add(Role(role))
        cached = user._forge_team_roles = {t: frozenset(r) for t, r in found.items()}
    return cached


def everywhere(user: Any, action: Action | str) -> bool:
    """May ``user`` do ``action`` on every object, whichever team owns it (or none)?"""
    if user is None:
        return True
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_superuser or roles_of(user) & PERMISSIONS[Action(action)])


def teams_where(user: Any, action: Action | str = Action.READ) -> frozenset[str] | None:
    """The teams in which ``user`` may do ``action``; None when they may everywhere.
    Objects no team owns are covered only by None."""
    if everywhere(user, action):
        return None
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    needed = PERMISSIONS[Action(action)]
    return frozenset(team for team, roles in team_roles(user).items() if roles & needed)


def allowed(user: Any, action: Action | str, team: str | None = None) -> bool:
    """May ``user`` do ``action`` on an object of ``team`` ("" = owned by no team)?
    With ``team=None``: may they do it anywhere?"""
    teams = teams_where(user, action)
    if teams is None:
        return True
    return bool(teams) if team is None else team in teams


def needed_roles(action: Action | str) -> str:
    return ", ".join(sorted(PERMISSIONS[Action(action)]))


def team_q(user: Any, action: Action | str = Action.READ, field: str = "team") -> Q:
    """The rows (by their team column ``field``) on which ``user`` may do ``action``."""
    teams = teams_where(user, action)
    if teams is None:
        return Q()
    return Q(**{f"{field}__in": sorted(teams)}) if teams else Q(pk__in=[])
