"""Who may do what: the one table of roles (Django groups) and actions.

- ``reviewer``: answer interrupts, add steering notes, fork a thread into a new branch.
- ``supervisor``: also targeted resume of sub-agents, cancel, start runs, recover failed
  runs, and assign interrupts (or release anyone's claim).
- ``auditor``: read everything, change nothing.

Every role may read. Superusers may do everything; ``user=None`` is a management command
(trusted code, not a person) and may too. The services and the API both ask ``allowed``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


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


def roles_of(user: Any) -> frozenset[Role]:
    """The user's forge roles, cached on the user object (one query per request)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_forge_roles", None)
    if cached is None:
        cached = user._forge_roles = frozenset(
            Role(name) for name in groups_of(user) if name in ROLE_NAMES)
    return cached


def allowed(user: Any, action: Action | str) -> bool:
    """May ``user`` do ``action``?"""
    if user is None:
        return True
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_superuser or roles_of(user) & PERMISSIONS[Action(action)])


def needed_roles(action: Action | str) -> str:
    return ", ".join(sorted(PERMISSIONS[Action(action)]))
