"""One interrupt's answer panel, shown on its page, in a run tree and after an answer."""

from __future__ import annotations

import copy
import json
from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest

from forgeui.inbox.payloads import present
from forgeui.inbox.rows import answer_schema, asks_yes_no, note_to
from forgeui.models import Answer, Interrupt, InterruptStatus
from forgeui.permissions.roles import PERMISSIONS, ROLE_NAMES, Action, allowed
from forgeui.permissions.teams import enabled, split_group
from forgeui.requests.present import facts_of as request_facts
from forgeui.requests.present import form_for as request_form
from forgeui.runs import services
from forgeui.runs.answer_rules import declared_actions, declared_schema, schema_problem
from forgeui.runs.policies import approvals
from forgeui.runs.wording import interrupt_summary
from forgeui.team import assignment
from forgeui.team.sensitive import mask
from forgeui.web.forms import (
    MAX_JSON_CHARS,
    MAX_NOTE_CHARS,
    edit_form,
    schema_form_class,
    with_edit_forms,
)
from forgeui.web.visibility import masked_copy, may_answer_in


def panel_context(interrupt: Interrupt, viewer: assignment.Viewer | None = None,
                  user: Any = None, **extra: Any) -> dict[str, Any]:
    """The answer panel: the form while pending, else who answered and where things stand.

    With a ``viewer``, the form shows only if they may answer it (assignment, claim);
    with a ``user``, only if they may answer in its team, its sensitive keys masked if
    not. ``where`` says which form posts: ``page`` (the interrupt page, which then moves
    on to the next item), ``panel`` (the run tree) or ``row``.
    """
    interrupt, answers = _seen_by(user, interrupt)
    context = {
        "interrupt": interrupt, "payload_json": pretty(interrupt.payload),
        "presented": present(interrupt.payload, interrupt.node, interrupt.kind),
        "summary": interrupt_summary(interrupt), "where": "panel",
        "path": "/".join(interrupt.namespace), "note_to": note_to(interrupt),
        "typed": {}, "limits": {"note": MAX_NOTE_CHARS, "json": MAX_JSON_CHARS},
        "answers": answers,
        "pending": interrupt.status == InterruptStatus.PENDING,
        "request": with_edit_forms(request_form(interrupt), interrupt),
        "request_facts": request_facts(interrupt),
        **_forms(interrupt), **_people(interrupt, viewer), **_read_only(user, interrupt),
    }
    if not context["pending"] and "stale" not in extra:  # who closed it, where things stand
        context["stale"] = services.stale_answer(interrupt.pk, None)
    return {**context, **extra}


def _seen_by(user: Any, interrupt: Interrupt) -> tuple[Interrupt, list[Answer]]:
    """The interrupt and its answers as ``user`` may see them (masked unless they may
    answer in its team)."""
    if may_answer_in(user, interrupt.team):
        return interrupt, answers_of(interrupt, ())
    return masked_copy(interrupt), answers_of(interrupt, interrupt.sensitive)


def _read_only(user: Any, interrupt: Interrupt) -> dict[str, Any]:
    """No form for a reader of the interrupt's team who may not answer there."""
    return {} if may_answer_in(user, interrupt.team) else {"answerable": False, "mode": "read"}


def answers_of(interrupt: Interrupt, keys: Any) -> list[Answer]:
    """The answers given to ``interrupt``, oldest first, ``keys`` masked in their values."""
    found = list(Answer.objects.filter(interrupt_id=interrupt.pk).select_related("user")
                 .order_by("created_at"))
    if not keys:
        return found
    shown = [copy.copy(answer) for answer in found]
    for answer in shown:
        answer.value = mask(answer.value, keys)
    return shown


def _forms(interrupt: Interrupt) -> dict[str, Any]:
    """How the payload asks to be answered: actions, a schema's form, yes/no, JSON."""
    payload = interrupt.payload
    schema = answer_schema(payload)
    actions = declared_actions(payload)
    form_class = None if actions else schema_form_class(schema)
    declared = declared_schema(payload)
    return {
        "actions": actions, "schema": schema,
        "schema_form": form_class(prefix="answer") if form_class else None,
        "edit_form": edit_form(payload),
        "plain": asks_yes_no(payload) and not interrupt.is_breakpoint,
        "breakpoint": interrupt.is_breakpoint,
        "schema_problem": (None if schema is not None or declared is None
                           else schema_problem(declared)),
        "edit_json": pretty(edit_start(payload)),
    }


def _people(interrupt: Interrupt, viewer: assignment.Viewer | None) -> dict[str, Any]:
    """Who may answer, who holds it, and the votes a policy has counted so far."""
    tally = approvals.tallies([interrupt]).get(interrupt.pk)
    voted = None
    if tally is not None and viewer is not None:
        voted = next((a for a in (*tally.approvals, *tally.rejections)
                      if a.user_id == viewer.user_id), None)
    return {
        "answerable": viewer is None or assignment.may_answer(viewer, interrupt),
        "mode": assignment.mode(viewer, interrupt) if viewer else "answer",
        "claimed_by": interrupt.claimed_by.get_username() if interrupt.claimed_by_id else "",
        "assigned_users": interrupt.assigned_users, "assigned_groups": interrupt.assigned_groups,
        "approvals": tally, "voted": voted,
        "refused": policy_refusal(tally, viewer, interrupt),
    }


def policy_refusal(tally: approvals.Tally | None, viewer: assignment.Viewer | None,
                   interrupt: Interrupt) -> str:
    """Why the policy would refuse ``viewer``'s answer, so no form offers it; "" if not."""
    if (tally is None or viewer is None or viewer.user_id is None
            or interrupt.status != InterruptStatus.PENDING):
        return ""
    person = get_user_model().objects.get(pk=viewer.user_id)
    return approvals.why_not_counted(tally.policy, person, interrupt) or ""


def assign_choices(request: HttpRequest, interrupt: Interrupt, users: list[str] | None = None,
                   groups: list[str] | None = None, error: str = "") -> dict[str, Any] | None:
    """The assignment picker: users who may answer and every group, the chosen ticked."""
    if not allowed(request.user, Action.ASSIGN, interrupt.team):
        return None
    users = interrupt.assigned_users if users is None else users
    groups = interrupt.assigned_groups if groups is None else groups
    return {"users": [{"name": name, "roles": roles, "checked": name in users}
                      for name, roles in answerers_in(interrupt.team)],
            "groups": [{"name": name, "checked": name in groups}
                       for name in groups_in(interrupt.team)],
            "error": error}


def answerers_in(team: str) -> list[tuple[str, str]]:
    """Who may answer in ``team``: holders of a plain answering role, then of that team's
    (``finance:reviewer``); nobody of another team is offered."""
    found = assignment.answerers()
    if not enabled() or not team:
        return found
    return merged(found, team_answerers(team))


def merged(people: list[tuple[str, str]], more: list[tuple[str, str]],
           ) -> list[tuple[str, str]]:
    """``people``, then those of ``more`` not among them."""
    listed = {name for name, _ in people}
    return people + [person for person in more if person[0] not in listed]


def team_answerers(team: str) -> list[tuple[str, str]]:
    """Active holders of ``team``'s answering roles, with those roles."""
    roles = [f"{team}:{role}" for role in sorted(PERMISSIONS[Action.ANSWER])]
    members = (get_user_model().objects.filter(is_active=True, groups__name__in=roles)
               .distinct().order_by("username").prefetch_related("groups"))
    return [(member.get_username(),
             ", ".join(sorted(g.name for g in member.groups.all() if g.name in roles)))
            for member in members]


def groups_in(team: str) -> list[str]:
    """The groups an interrupt of ``team`` may be assigned to: not another team's roles."""
    names = assignment.group_names()
    if not enabled():
        return names
    return [name for name in names if offered(name, team)]


def offered(group: str, team: str) -> bool:
    """Any group but a role of another team, or a role of ``team`` that may not answer."""
    split = split_group(group)
    if split is None or split[1] not in ROLE_NAMES:
        return True
    return split[0] == team and split[1] in PERMISSIONS[Action.ANSWER]


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def edit_start(payload: Any) -> Any:
    """What a JSON ``edit`` starts from: the proposal's args, else the payload without
    the answer instructions."""
    if not isinstance(payload, dict):
        return payload
    if payload.get("args") is not None:
        return payload["args"]
    return {k: v for k, v in payload.items()
            if k not in ("question", "title", "description", "actions", "answer_schema")}
