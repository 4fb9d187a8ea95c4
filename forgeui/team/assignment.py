"""Who may answer an interrupt: its assignees, its claim, and the viewer's groups.

An interrupt names its assignees with ``ctx.interrupt(payload, assignees={"users": [...],
"groups": [...]})`` (never with a payload key) or gets them from a supervisor later.
They are kept on the row as ``"\\nuser:alice\\ngroup:finance\\n"`` tokens, so "assigned
to me" is a ``contains`` filter on SQLite and PostgreSQL alike. A claim (``claimed_by``)
narrows it to one person.

``may_answer`` is the one rule, used by the services, the pages and the websocket:

- the role must allow answering in the interrupt's team (``forgeui.permissions.roles``);
- superusers and ``None`` (the system: deadlines, commands) may always;
- nobody else may answer what another person claimed;
- with assignees, only a named user or a member of a named group may.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Q

from forgeui.models.assignees import decode, token
from forgeui.permissions.roles import PERMISSIONS, Action, Role, allowed, groups_of, teams_where

# How a row is shown to one viewer; "refused": readable, but its policy would not count
# this viewer's answer (chosen above this layer, where policies are known).
Mode = Literal["answer", "mine", "read", "refused"]


@dataclass(frozen=True, slots=True)
class Viewer:
    """What the assignment rules need to know about a user, read once."""

    user_id: int | None
    username: str
    groups: frozenset[str]
    can_answer: bool
    unrestricted: bool  # superuser or system
    answer_teams: frozenset[str] | None = None  # where they may answer; None: everywhere

    @classmethod
    def of(cls, user: Any) -> Viewer:
        """One query for the user's group names (none for ``None``)."""
        if user is None:
            return cls(None, "", frozenset(), True, True)
        if not getattr(user, "is_authenticated", False):
            return cls(None, "", frozenset(), False, False)
        groups = groups_of(user)
        return cls(user.pk, user.get_username(), groups, allowed(user, Action.ANSWER),
                   bool(user.is_superuser), teams_where(user, Action.ANSWER))

    def answers_in(self, team: str) -> bool:
        """Whether their role lets them answer an interrupt of ``team``."""
        return self.unrestricted or self.answer_teams is None or team in self.answer_teams

    def tokens(self) -> list[str]:
        """The assignee tokens that name this viewer."""
        return [token("user", self.username), *(token("group", g) for g in sorted(self.groups))]


def is_assigned(viewer: Viewer, stored: str) -> bool:
    return any(t in (stored or "") for t in viewer.tokens())


def may_answer(viewer: Viewer, interrupt: Any) -> bool:
    """The one rule (module docstring); reads only the row, never the database."""
    if viewer.unrestricted:
        return True
    if not viewer.can_answer or not viewer.answers_in(getattr(interrupt, "team", "")):
        return False
    if interrupt.claimed_by_id is not None:
        return bool(interrupt.claimed_by_id == viewer.user_id)
    return not interrupt.assignees or is_assigned(viewer, interrupt.assignees)


def mode(viewer: Viewer, interrupt: Any) -> Mode:
    """How ``interrupt``'s row looks to ``viewer``: answerable, claimed by them, or read-only."""
    if not may_answer(viewer, interrupt):
        return "read"
    return "mine" if interrupt.claimed_by_id == viewer.user_id else "answer"


def refusal(viewer: Viewer, interrupt: Any) -> str:
    """Why ``viewer`` may not answer (for a 403 and its audit row)."""
    if not viewer.answers_in(getattr(interrupt, "team", "")):
        return f"it belongs to team {interrupt.team}, where you hold no role that answers"
    if interrupt.claimed_by_id is not None and interrupt.claimed_by_id != viewer.user_id:
        who = interrupt.claimed_by.get_username() if interrupt.claimed_by else "someone"
        return f"claimed by {who}"
    users, groups = decode(interrupt.assignees)
    return "assigned to " + ", ".join([*users, *(f"group {g}" for g in groups)])


def answerers() -> list[tuple[str, str]]:
    """Active users whose role lets them answer, with their roles: the assignment picker."""
    can_answer = sorted(PERMISSIONS[Action.ANSWER])
    found = (get_user_model().objects.filter(is_active=True)
             .filter(Q(groups__name__in=can_answer) | Q(is_superuser=True))
             .distinct().order_by("username").prefetch_related("groups"))
    return [(user.get_username(),
             ", ".join(sorted(g.name for g in user.groups.all() if g.name in can_answer))
             or ("admin" if user.is_superuser else ""))
            for user in found]


def group_names() -> list[str]:
    """Groups an interrupt can be assigned to: all but the roles that may not answer."""
    mute = [role for role in Role if role not in PERMISSIONS[Action.ANSWER]]
    return list(Group.objects.exclude(name__in=mute).order_by("name")
                .values_list("name", flat=True))
