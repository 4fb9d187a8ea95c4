"""Membership and role changes join the audit chain.

Roles are Django groups (``reviewer``, ``finance:reviewer``), so every change of who
holds what is a change of ``User.groups``: from the admin, from a single sign-on sync,
from a shell. Each user added to or removed from a group, in either direction of the
relation, by ``add``, ``remove``, ``set`` or ``clear``, or by deleting the group or the
user, writes one ``membership.added`` / ``membership.removed`` entry in the same
transaction. An entry for a team's group carries the team, so that team's auditors read it.

Importing the module connects it (``ForgeUIConfig.ready``). The signals do not know who
made the change: ``acting(user, sign_in)`` says it for the code inside it (the admin, the
SSO backend); without it the entry names no actor.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models.signals import m2m_changed, pre_delete
from django.dispatch import receiver

from forgeui.models import AuditEntry
from forgeui.permissions.teams import NO_TEAM, split_group

ADDED = "membership.added"
REMOVED = "membership.removed"
# Who is changing memberships in this context: (user, how they signed in).
_actor: ContextVar[tuple[Any, str]] = ContextVar("forge_membership_actor", default=(None, ""))
# The pairs a remove or clear is about to take away, kept on the instance between the
# pre_ and post_ signals: Django sends a remove the ids it was given, held or not.
PENDING = "_forge_membership_pending"


@contextmanager
def acting(user: Any, sign_in: str = "") -> Iterator[None]:
    """Membership changes made inside are recorded as ``user``'s."""
    token = _actor.set((user, sign_in))
    try:
        yield
    finally:
        _actor.reset(token)


def team_of_group(name: str) -> str:
    """The team a ``team:role`` group belongs to; ``NO_TEAM`` for a plain group."""
    parts = split_group(name)
    return parts[0] if parts else NO_TEAM


def record(action: str, pairs: Iterable[tuple[int, str, str]], using: str) -> None:
    """One audit entry per (user id, username, group name), in the changed database."""
    actor, sign_in = _actor.get()
    for user_id, username, group in sorted(pairs, key=lambda p: (p[2], p[0])):
        AuditEntry.objects.using(using).create(
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            sign_in=sign_in, action=action, object_type="user", object_id=str(user_id),
            detail={"group": group, "user": username}, team=team_of_group(group))


def held(instance: Any, reverse: bool, pk_set: Iterable[int] | None,
         using: str) -> set[tuple[int, str, str]]:
    """The (user id, username, group) memberships ``instance`` has among ``pk_set``
    (all of them for None), read from the join table before it changes."""
    rows = get_user_model().groups.through.objects.using(using).filter(
        **{"group_id" if reverse else "user_id": instance.pk})
    if pk_set is not None:
        rows = rows.filter(**{"user_id__in" if reverse else "group_id__in": list(pk_set)})
    return set(rows.values_list("user_id", "user__username", "group__name"))


def pairs_added(instance: Any, reverse: bool, pk_set: Iterable[int],
                using: str) -> set[tuple[int, str, str]]:
    """Django sends an add only the ids that were not held yet: each is a new membership."""
    if reverse:
        users = get_user_model().objects.using(using).filter(pk__in=list(pk_set))
        return {(pk, name, instance.name) for pk, name in users.values_list("pk", "username")}
    groups = Group.objects.using(using).filter(pk__in=list(pk_set)).values_list("name",
                                                                               flat=True)
    return {(instance.pk, instance.get_username(), name) for name in groups}


@receiver(m2m_changed, sender=get_user_model().groups.through,
          dispatch_uid="forgeui.membership.groups")
def on_groups_changed(sender: Any, instance: Any, action: str, reverse: bool,
                      pk_set: set[int] | None, using: str, **kwargs: Any) -> None:
    if action == "post_add" and pk_set:
        record(ADDED, pairs_added(instance, reverse, pk_set, using), using)
    elif action in ("pre_remove", "pre_clear"):
        setattr(instance, PENDING, held(instance, reverse,
                                        pk_set if action == "pre_remove" else None, using))
    elif action in ("post_remove", "post_clear"):
        record(REMOVED, instance.__dict__.pop(PENDING, set()), using)


@receiver(pre_delete, sender=Group, dispatch_uid="forgeui.membership.delete")
def on_group_deleted(sender: Any, instance: Group, using: str, **kwargs: Any) -> None:
    """Deleting a group takes it from every member; the rows go without an m2m signal."""
    record(REMOVED, held(instance, True, None, using), using)


@receiver(pre_delete, sender=get_user_model(), dispatch_uid="forgeui.membership.user_deleted")
def on_user_deleted(sender: Any, instance: Any, using: str, **kwargs: Any) -> None:
    """A deleted user leaves every group they were in, without an m2m signal either."""
    record(REMOVED, held(instance, False, None, using), using)
