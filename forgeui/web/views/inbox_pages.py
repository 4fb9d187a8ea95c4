"""The inbox and one interrupt: answer, note, claim, assign, answer in bulk."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from forgeui.inbox.payloads import present
from forgeui.inbox.rows import (
    PAGE_SIZE,
    InboxFilters,
    RowFacts,
    answer_schema,
    asks_yes_no,
    row_context,
    summary,
    tab_links,
)
from forgeui.models import Answer, Event, Interrupt, InterruptStatus
from forgeui.requests.present import form_for as request_form
from forgeui.runs import decision_context, registry, services
from forgeui.runs.answer_rules import declared_actions, declared_schema, schema_problem
from forgeui.runs.exceptions import (
    ForgeUIError,
    InvalidRequest,
    StaleAnswer,
)
from forgeui.team import assignment
from forgeui.team.roles import Action, allowed
from forgeui.web.forms import (
    MAX_JSON_CHARS,
    MAX_NOTE_CHARS,
    AnswerRejected,
    edit_form,
    read_answer,
    schema_form_class,
)
from forgeui.web.views.common import (
    go_to,
    is_htmx,
    page,
    permissions,
    refusal,
    requires,
)
from runtime.errors import ForgeError


@require_GET
@requires(Action.READ)
def inbox(request: HttpRequest) -> HttpResponse:
    filters = InboxFilters.from_query(request.GET)
    viewer = assignment.Viewer.of(request.user)
    cursor = Event.objects.last_id()  # read before the rows, so no change falls between
    found = Interrupt.objects.select_related("run", "claimed_by")
    rows = Paginator(filters.apply(found, viewer), PAGE_SIZE)
    current = rows.get_page(request.GET.get("page"))
    facts = RowFacts.of(current)
    context = {
        "filters": filters, "cursor": cursor, "page": current, "tabs": tab_links(filters),
        "rows": [row_context(i, assignment.mode(viewer, i), facts) for i in current],
        "graphs": registry.graph_names(), "sub_agents": sub_agents(),
    }
    partial = "more" if request.GET.get("page") else "inbox"
    return page(request, "forgeui/inbox.html", partial, context)


def sub_agents() -> list[str]:
    pending = Interrupt.objects.pending().exclude(sub_agent_id="")
    return sorted(set(pending.values_list("sub_agent_id", flat=True).distinct()))


# -- one interrupt ----------------------------------------------------------------------

@require_GET
@requires(Action.READ)
def interrupt_detail(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    interrupt = get_object_or_404(Interrupt.objects.select_related("run", "claimed_by"),
                                  pk=interrupt_id)
    panel = panel_context(interrupt, assignment.Viewer.of(request.user), where="page")
    return page(request, "forgeui/interrupt.html", "panel",
                {"p": panel, "assign": assign_choices(request, interrupt),
                 "decision": decision_context.for_interrupt(interrupt)})


def assign_choices(request: HttpRequest, interrupt: Interrupt, users: list[str] | None = None,
                   groups: list[str] | None = None, error: str = "") -> dict[str, Any] | None:
    """The assignment picker: users who may answer and every group, the chosen ticked."""
    if not allowed(request.user, Action.ASSIGN):
        return None
    users = interrupt.assigned_users if users is None else users
    groups = interrupt.assigned_groups if groups is None else groups
    return {"users": [{"name": name, "roles": roles, "checked": name in users}
                      for name, roles in assignment.answerers()],
            "groups": [{"name": name, "checked": name in groups}
                       for name in assignment.group_names()],
            "error": error}


# What a person typed into an answer form, given back whenever it is shown again.
TYPED_FIELDS = ("steering", "text", "edit_json", "json_value")


def panel_context(interrupt: Interrupt, viewer: assignment.Viewer | None = None,
                  **extra: Any) -> dict[str, Any]:
    """The answer panel: the form while pending, else who answered and where things stand.

    With a ``viewer``, the form shows only if they may answer it (assignment, claim).
    ``where`` says which form posts: ``page`` (the interrupt page, which then moves on
    to the next item), ``panel`` (the run tree) or ``row``.
    """
    payload = interrupt.payload
    schema = answer_schema(payload)
    actions = declared_actions(payload)
    form_class = None if actions else schema_form_class(schema)
    context = {
        "interrupt": interrupt, "payload_json": pretty(payload),
        "presented": present(payload, interrupt.node, interrupt.kind),
        "summary": summary(interrupt), "where": "panel",
        "path": "/".join(interrupt.namespace), "actions": actions,
        "schema": schema, "schema_form": form_class(prefix="answer") if form_class else None,
        "edit_form": edit_form(payload),
        "plain": asks_yes_no(payload),
        "schema_problem": (None if schema is not None or declared_schema(payload)
                           is None else schema_problem(declared_schema(payload))),
        "edit_json": pretty(edit_start(payload)),
        "note_to": note_to(interrupt),
        "typed": {}, "limits": {"note": MAX_NOTE_CHARS, "json": MAX_JSON_CHARS},
        "answers": Answer.objects.filter(interrupt=interrupt).select_related("user")
                         .order_by("created_at"),
        "pending": interrupt.status == InterruptStatus.PENDING,
        "answerable": viewer is None or assignment.may_answer(viewer, interrupt),
        "mode": assignment.mode(viewer, interrupt) if viewer else "answer",
        "claimed_by": interrupt.claimed_by.get_username() if interrupt.claimed_by_id else "",
        "assigned_users": interrupt.assigned_users, "assigned_groups": interrupt.assigned_groups,
        "request": request_form(interrupt),
    }
    if not context["pending"] and "stale" not in extra:  # who closed it, where things stand
        context["stale"] = services.stale_answer(interrupt.pk, None)
    return {**context, **extra}


def note_to(interrupt: Interrupt) -> str:
    """Who reads a note given with this answer: the sub-agent, else the root run."""
    return interrupt.sub_agent_id or f"this run ({'/'.join(interrupt.namespace)})"


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


@require_POST
@requires(Action.ANSWER)
def answer(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """Answer from a row (``where=row``), the interrupt page (``where=page``, then on to
    the next item) or a run-tree panel. Every refusal gives back what was typed."""
    interrupt = get_object_or_404(Interrupt.objects.select_related("run", "claimed_by"),
                                  pk=interrupt_id)
    where = request.POST.get("where", "")
    where = where if where in ("row", "page") else "panel"
    typed = {name: request.POST.get(name, "") for name in TYPED_FIELDS}
    try:
        given = read_answer(interrupt.payload, request.POST)
        services.answer_interrupt(request.user, interrupt.pk, given.value,
                                  steering=given.steering or None)
    except AnswerRejected as exc:
        return answered(request, interrupt, where, 422, error=str(exc), bound=exc.form,
                        typed=typed)
    except StaleAnswer as stale:
        return answered(request, interrupt, where, 409, stale=stale, typed=typed)
    except InvalidRequest as exc:
        return answered(request, interrupt, where, 422, error=str(exc), typed=typed)
    except ForgeUIError as exc:
        return refusal(request, exc)
    if where == "page":
        return next_item(request, interrupt)
    if not is_htmx(request):
        return redirect("forgeui:interrupt", interrupt_id=interrupt.pk)
    interrupt.refresh_from_db()
    return answered(request, interrupt, where, 200, mine=True)


def next_item(request: HttpRequest, answered_one: Interrupt) -> HttpResponse:
    """After an answer on the interrupt page: the next one this person may answer, in the
    inbox's order, or the inbox when there is none."""
    viewer = assignment.Viewer.of(request.user)
    following = (InboxFilters().apply(Interrupt.objects.all(), viewer)
                 .exclude(pk=answered_one.pk).select_related("run", "claimed_by"))
    upcoming = next((i for i in following[:50] if assignment.may_answer(viewer, i)), None)
    note = f"Your answer to “{summary(answered_one)}” was recorded."
    if upcoming is None:
        messages.success(request, f"{note} Nothing else is waiting for you.")
        target = reverse("forgeui:inbox")
    else:
        messages.success(request, f"{note} Next: {summary(upcoming)}")
        target = reverse("forgeui:interrupt", kwargs={"interrupt_id": upcoming.pk})
    return go_to(request, target)


@require_POST
@requires(Action.STEER)
def keep_note(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """A note typed with an answer that lost its race, kept as a note on the run."""
    interrupt = get_object_or_404(Interrupt.objects.select_related("run"), pk=interrupt_id)
    text = request.POST.get("text", "")
    try:
        services.add_steering_note(request.user, interrupt.run_id, text[:MAX_NOTE_CHARS])
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    done = f"Saved as a steering note on {'/'.join(interrupt.namespace)}."
    if not is_htmx(request):
        messages.success(request, done)
        return redirect("forgeui:interrupt", interrupt_id=interrupt.pk)
    return render(request, "forgeui/interrupt.html#note-kept", {"message": done})


BULK_VALUES = {"approve": True, "reject": False}


@require_POST
@requires(Action.ANSWER)
def bulk(request: HttpRequest) -> HttpResponse:
    """Answer the ticked rows (or every row matching the inbox's filters) with one value."""
    value = BULK_VALUES.get(request.POST.get("action", ""))
    if value is None:
        return refusal(request, InvalidRequest("choose Approve or Reject"))
    if request.POST.get("all"):
        filters = InboxFilters.from_query(request.POST.get("query", ""))
        found = filters.apply(Interrupt.objects.all(), assignment.Viewer.of(request.user))
        ids = list(found.pending().values_list("id", flat=True)[:services.MAX_BULK])
    else:
        ids = request.POST.getlist("ids")
    try:
        outcomes = services.bulk_answer(request.user, ids, value,
                                        steering=request.POST.get("steering", "").strip() or None)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    accepted = sum(o.outcome == "accepted" for o in outcomes)
    return render(request, "forgeui/inbox.html#bulk-results",
                  {"outcomes": outcomes, "accepted": accepted})


@require_POST
@requires(Action.ANSWER)
def claim(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """Claim (``op=claim``) or release (``op=release``) from a row; the row comes back."""
    release = request.POST.get("op") == "release"
    act = services.release_interrupt if release else services.claim_interrupt
    try:
        interrupt = act(request.user, interrupt_id)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    if not is_htmx(request):
        return redirect("forgeui:interrupt", interrupt_id=interrupt_id)
    row = row_context(interrupt, assignment.mode(assignment.Viewer.of(request.user), interrupt))
    return render(request, "forgeui/inbox.html#row", {"row": row})


@require_POST
@requires(Action.ASSIGN)
def assign(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """The supervisor's assignment picker on the interrupt page (ticked users and groups).

    A refusal (say, a user deleted meanwhile) comes back inside the page, choices kept.
    """
    interrupt = get_object_or_404(Interrupt.objects.select_related("run", "claimed_by"),
                                  pk=interrupt_id)
    users, groups = request.POST.getlist("users"), request.POST.getlist("groups")
    try:
        services.assign_interrupt(request.user, interrupt_id, users, groups)
    except InvalidRequest as exc:
        panel = panel_context(interrupt, assignment.Viewer.of(request.user))
        picker = assign_choices(request, interrupt, users, groups, str(exc))
        return page(request, "forgeui/interrupt.html", "panel",
                    {"p": panel, "assign": picker}, status=422)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    return redirect("forgeui:interrupt", interrupt_id=interrupt_id)


def answered(request: HttpRequest, interrupt: Interrupt, where: str, status: int,
             **extra: Any) -> HttpResponse:
    """The row or panel after an answer attempt: done, stale (409) or refused (422)."""
    bound = extra.pop("bound", None)
    viewer = assignment.Viewer.of(request.user)
    panel = panel_context(interrupt, viewer, where=where, **extra)
    if bound is not None:
        panel["edit_form" if bound.prefix == "edit" else "schema_form"] = bound
    if where == "row":
        row = row_context(interrupt, assignment.mode(viewer, interrupt))
        if "error" in extra:  # the row itself again, with the message and the note kept
            row.update(error=extra["error"], note=panel["typed"].get("steering", ""))
            name = "forgeui/inbox.html#row"
        else:
            name = "forgeui/inbox.html#row-outcome"
        return render(request, name, {"p": panel, "row": row, **permissions(request)},
                      status=status)
    context = {"p": panel}
    if where == "page":
        context["decision"] = decision_context.for_interrupt(interrupt)
    else:  # a run-tree panel shows its context inside
        panel["decision"] = decision_context.for_interrupt(interrupt)
    return page(request, "forgeui/interrupt.html", "panel", context, status)
