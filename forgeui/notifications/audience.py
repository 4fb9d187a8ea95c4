"""Who may be told about an object: the people who may read it in its team.

A query over users, so a message is addressed by the database, never by looping over
people: superusers, holders of a plain role that allows the action (everywhere), and, for
an object owned by a team, holders of that team's role (``finance:reviewer``).
"""

from __future__ import annotations

from django.db.models import Q

from forgeui.permissions import teams
from forgeui.permissions.roles import PERMISSIONS, Action


def readers(team: str, action: Action | str = Action.READ) -> Q:
    """The users who may do ``action`` on an object of ``team`` ("" = of no team)."""
    roles = sorted(PERMISSIONS[Action(action)])
    names = [*roles, *(f"{team}:{role}" for role in roles)] if team else roles
    return Q(is_superuser=True) | Q(groups__name__in=names)


def told_of(team: str, action: Action | str = Action.READ) -> Q:
    """``readers`` with teams; without teams, everyone (as before teams existed)."""
    return readers(team, action) if teams.enabled() else Q()
