"""Who may answer an interrupt: a claim taken and released, assignees named.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from forgeui.models import EventKind, Interrupt, InterruptStatus, assignees
from forgeui.models.events import EventDraft, publish_on_commit
from forgeui.permissions.roles import Action
from forgeui.runs.exceptions import AlreadyClaimed, InvalidRequest, StaleAnswer
from forgeui.runs.services._common import User, audit, get_interrupt, require_role, stale_answer
from forgeui.runs.services.checks import require_answerable
from forgeui.team import assignment

ForgeUIErrorType = AlreadyClaimed | StaleAnswer


def claim_interrupt(user: User, interrupt_id: str) -> Interrupt:
    """Take a pending interrupt: until released, only ``user`` may answer it.

    Raises ``Forbidden`` when ``user`` may not answer it and ``AlreadyClaimed`` (409) when
    someone else claimed it first; claiming one's own claim again changes nothing.
    """
    interrupt = get_interrupt(user, interrupt_id)
    _require(user, Action.ANSWER, interrupt)
    if interrupt.claimed_by_id is not None:
        if interrupt.claimed_by_id == getattr(user, "pk", None):
            return interrupt
        raise _claim_lost(interrupt.pk)
    require_answerable(user, interrupt)
    with transaction.atomic():
        taken = Interrupt.objects.filter(pk=interrupt.pk, claimed_by__isnull=True).pending()
        if taken.update(claimed_by=user, claimed_at=timezone.now()) != 1:
            raise _claim_lost(interrupt.pk)
        changed(user, "interrupt.claim", interrupt, {})
    return get_interrupt(user, interrupt.pk)


def release_interrupt(user: User, interrupt_id: str) -> Interrupt:
    """Give a claim back; supervisors may release anyone's."""
    interrupt = get_interrupt(user, interrupt_id)
    _require(user, Action.ANSWER, interrupt)
    if interrupt.claimed_by_id is None:
        return interrupt
    mine = interrupt.claimed_by_id == getattr(user, "pk", None)
    if not mine:
        _require(user, Action.ASSIGN, interrupt)
    with transaction.atomic():
        Interrupt.objects.filter(pk=interrupt.pk).update(claimed_by=None, claimed_at=None)
        changed(user, "interrupt.release", interrupt,
                 {"claimed_by": interrupt.claimed_by.get_username()})
    return get_interrupt(user, interrupt.pk)


def assign_interrupt(user: User, interrupt_id: str, users: list[str],
                     groups: list[str]) -> Interrupt:
    """Name who may answer (supervisor); empty lists open it to every reviewer.

    A claim by someone the new assignees leave out ends.
    """
    interrupt = get_interrupt(user, interrupt_id)
    _require(user, Action.ASSIGN, interrupt)
    if interrupt.status != InterruptStatus.PENDING:
        raise stale_answer(interrupt.pk, None)
    _require_known(users, groups)
    stored = assignees.encode(users, groups)
    update: dict[str, Any] = {"assignees": stored}
    claimer = interrupt.claimed_by
    if claimer is not None and stored and not assignment.is_assigned(
            assignment.Viewer.of(claimer), stored):
        update.update(claimed_by=None, claimed_at=None)
    with transaction.atomic():
        Interrupt.objects.filter(pk=interrupt.pk).update(**update)
        users_now, groups_now = assignees.decode(stored)
        changed(user, "interrupt.assign", interrupt,
                 {"users": users_now, "groups": groups_now,
                  "before": {"users": interrupt.assigned_users,
                             "groups": interrupt.assigned_groups},
                  "claim_ended": "claimed_by" in update})
    return get_interrupt(user, interrupt.pk)


def _require(user: User, action: Action, interrupt: Interrupt) -> None:
    require_role(user, action, interrupt.team, object_type="interrupt", object_id=interrupt.pk,
                 run_id=interrupt.run_id, thread_id=interrupt.root_thread_id)


def _require_known(users: list[str], groups: list[str]) -> None:
    known = set(get_user_model().objects.filter(username__in=users)
                .values_list("username", flat=True))
    if missing := [u for u in users if u not in known]:
        raise InvalidRequest(f"no such users: {', '.join(missing)}", loc=["body", "users"])
    known = set(Group.objects.filter(name__in=groups).values_list("name", flat=True))
    if missing := [g for g in groups if g not in known]:
        raise InvalidRequest(f"no such groups: {', '.join(missing)}", loc=["body", "groups"])


def _claim_lost(interrupt_id: str) -> ForgeUIErrorType:
    row = Interrupt.objects.select_related("claimed_by").get(pk=interrupt_id)
    if row.status != InterruptStatus.PENDING:
        return stale_answer(interrupt_id, None)
    who = row.claimed_by.get_username() if row.claimed_by else "someone"
    return AlreadyClaimed(interrupt_id, who)


def changed(user: User, action: str, interrupt: Interrupt, detail: dict[str, Any]) -> None:
    """Audit a claim, release or assignment, and tell every inbox to redraw the row."""
    audit(user, action, object_type="interrupt", object_id=interrupt.pk, team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=interrupt.checkpoint_id, detail=detail)
    publish_on_commit([EventDraft(EventKind.INTERRUPT_UPDATED, interrupt.run_id,
                                  interrupt.root_thread_id, interrupt.pk,
                                  {"action": action})])
