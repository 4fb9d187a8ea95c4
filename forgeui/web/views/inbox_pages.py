"""The inbox and one interrupt: answer, note, claim, assign, answer in bulk."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from forgeui.inbox.rows import (
    PAGE_SIZE,
    InboxFilters,
    RowFacts,
    row_context,
    row_mode,
    tab_links,
)
from forgeui.models import Event, Interrupt, Vote
from forgeui.permissions.roles import Action
from forgeui.runs import bulk as bulk_answers
from forgeui.runs import decision_context, services, storable
from forgeui.runs.exceptions import ForgeUIError, InvalidRequest, StaleAnswer
from forgeui.runs.services.forking import links as forks
from forgeui.runs.wording import interrupt_summary
from forgeui.team import assignment
from forgeui.web import bulk_report
from forgeui.web.answer_panel import assign_choices, panel_context
from forgeui.web.forms import MAX_NOTE_CHARS, AnswerRejected, read_answer
from forgeui.web.views.common import go_to, is_htmx, page, permissions, refusal, requires
from forgeui.web.visibility import (
    decision_for,
    filtered,
    graphs_for,
    interrupt_or_404,
    may_answer_in,
    shown,
)
from runtime.errors import ForgeError


@require_GET
@requires(Action.READ)
def inbox(request: HttpRequest) -> HttpResponse:
    filters = InboxFilters.from_query(request.GET)
    user, viewer = request.user, assignment.Viewer.of(request.user)
    cursor = Event.objects.last_id()  # read before the rows, so no change falls between
    # The queue is what the user may take: rows of teams they only read stay out of it.
    needed = Action.ANSWER if filters.tab == "queue" else Action.READ
    found = Interrupt.objects.visible_to(user, needed).select_related("run", "claimed_by")
    rows = Paginator(filters.apply(found, viewer), PAGE_SIZE)
    current = rows.get_page(request.GET.get("page"))
    facts = RowFacts.of(current)
    context = {
        "filters": filters, "cursor": cursor, "page": current, "tabs": tab_links(filters),
        "rows": [row_for(user, viewer, i, facts) for i in current],
        "graphs": graphs_for(user), "sub_agents": sub_agents(user),
    }
    partial = "more" if request.GET.get("page") else "inbox"
    return page(request, "forgeui/inbox.html", partial, context)


def sub_agents(user: Any) -> list[str]:
    pending = Interrupt.objects.visible_to(user).pending().exclude(sub_agent_id="")
    return sorted(set(pending.values_list("sub_agent_id", flat=True).distinct()))


def row_for(user: Any, viewer: assignment.Viewer, interrupt: Interrupt,
            facts: RowFacts) -> dict[str, Any]:
    """One inbox row as ``user`` sees it: read-only where they may not answer in its
    team, its sensitive keys masked there."""
    shown_mode = (row_mode(viewer, interrupt, facts)
                  if may_answer_in(user, interrupt.team) else "read")
    return row_context(shown(user, interrupt), shown_mode, facts)


# -- one interrupt ----------------------------------------------------------------------

@require_GET
@requires(Action.READ)
def interrupt_detail(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    cursor = Event.objects.last_id()  # before the interrupt is read, as on the inbox
    user = request.user
    interrupt = interrupt_or_404(user, interrupt_id)
    panel = panel_context(interrupt, assignment.Viewer.of(user), user=user, where="page")
    return page(request, "forgeui/interrupt.html", "panel",
                {"p": panel, "assign": assign_choices(request, interrupt),
                 "decision": context_for(request, interrupt),
                 "fork": forks.origin(interrupt.root_thread_id), "cursor": cursor},
                team=interrupt.team)


def context_for(request: HttpRequest, interrupt: Interrupt) -> Any:
    """The context panel (input, state, notes), masked as the user may see it."""
    return decision_for(request.user, interrupt, decision_context.for_interrupt(interrupt))


# What a person typed into an answer form, given back whenever it is shown again.
TYPED_FIELDS = ("steering", "text", "edit_json", "json_value", "reason")


@require_POST
@requires(Action.ANSWER)
def answer(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """Answer from a row (``where=row``), the interrupt page (``where=page``, then on to
    the next item) or a run-tree panel. Every refusal gives back what was typed."""
    interrupt = interrupt_or_404(request.user, interrupt_id)
    where = request.POST.get("where", "")
    where = where if where in ("row", "page") else "panel"
    typed = {name: request.POST.get(name, "") for name in TYPED_FIELDS}
    try:
        given = read_answer(interrupt.payload, request.POST, interrupt.is_breakpoint)
        made = services.answer_interrupt(request.user, interrupt.pk, given.value,
                                         steering=given.steering or None)
    except AnswerRejected as exc:
        return answered(request, interrupt, where, 422, error=str(exc), bound=exc.form,
                        typed=typed)
    except ForgeUIError as exc:
        return refused(request, interrupt, where, exc, typed)
    counted = counted_words(made)
    return moved_on(request, interrupt, where,
                    counted and f"Your {counted} on “{interrupt_summary(interrupt)}”.",
                    **({"counted": counted} if counted else {"mine": True}))


def refused(request: HttpRequest, interrupt: Interrupt, where: str, exc: ForgeUIError,
            typed: dict[str, str], shown_as: str = "error") -> HttpResponse:
    """An answer or cancel refused: stale (409) or invalid (422, its message as
    ``shown_as``) in the row or panel, what was typed given back; else a notice."""
    if isinstance(exc, StaleAnswer):
        return answered(request, interrupt, where, 409, stale=exc, typed=typed)
    if isinstance(exc, InvalidRequest):
        return answered(request, interrupt, where, 422, typed=typed, **{shown_as: str(exc)})
    return refusal(request, exc)


def moved_on(request: HttpRequest, interrupt: Interrupt, where: str, note: str,
             **shown: Any) -> HttpResponse:
    """After an answer or a cancel: from the page, on to the next item (``note`` says what
    was done); from a row or panel, that fragment again, or the page without htmx."""
    if where == "page":
        return next_item(request, interrupt, note)
    if not is_htmx(request):
        return redirect("forgeui:interrupt", interrupt_id=interrupt.pk)
    interrupt.refresh_from_db()
    return answered(request, interrupt, where, 200, **shown)


def counted_words(made: services.Decided) -> str:
    """For an approval a policy counted but is not yet met: "approval was counted: 1 of 2
    approvals: ..."; "" for an answer the run goes on with."""
    if made.approval is None:
        return ""
    kind = "approval" if made.approval.vote == Vote.APPROVE else "rejection"
    return f"{kind} was counted: {made.progress}"


def next_item(request: HttpRequest, answered_one: Interrupt,
              note: str = "") -> HttpResponse:
    """After an answer on the interrupt page: the next one this person may answer, in the
    inbox's order, or the inbox when there is none."""
    viewer = assignment.Viewer.of(request.user)
    answerable = Interrupt.objects.visible_to(request.user, Action.ANSWER)
    following = (InboxFilters().apply(answerable, viewer)
                 .exclude(pk=answered_one.pk).select_related("run", "claimed_by"))
    upcoming = next((i for i in following[:50] if assignment.may_answer(viewer, i)), None)
    note = note or f"Your answer to “{interrupt_summary(answered_one)}” was recorded."
    if upcoming is None:
        messages.success(request, f"{note} Nothing else is waiting for you.")
        target = reverse("forgeui:inbox")
    else:
        messages.success(request, f"{note} Next: {interrupt_summary(upcoming)}")
        target = reverse("forgeui:interrupt", kwargs={"interrupt_id": upcoming.pk})
    return go_to(request, target)


@require_POST
@requires(Action.ANSWER)
def cancel_at_breakpoint(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """A breakpoint's "no": cancel its run with a reason (the interrupt page or a run-tree
    panel). A refusal gives back the reason as typed."""
    interrupt = interrupt_or_404(request.user, interrupt_id)
    where = "page" if request.POST.get("where") == "page" else "panel"
    # The note typed beside the reason is only given back (a cancelled run reads none).
    typed = {name: request.POST.get(name, "") for name in ("reason", "steering")}
    try:
        services.cancel_at_breakpoint(request.user, interrupt.pk, typed["reason"])
    except ForgeUIError as exc:
        return refused(request, interrupt, where, exc, typed, shown_as="cancel_error")
    return moved_on(request, interrupt, where,
                    f"You cancelled the run at “{interrupt_summary(interrupt)}”.",
                    mine=True, cancelled=True)


@require_POST
@requires(Action.STEER)
def keep_note(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """A steering note on the interrupt's run, left without answering (or typed with an
    answer that lost its race, and kept)."""
    interrupt = interrupt_or_404(request.user, interrupt_id, "run")
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


@require_POST
@requires(Action.ANSWER)
def bulk(request: HttpRequest) -> HttpResponse:
    """Answer the ticked rows (or every row matching the inbox's filters) that the chosen
    action settles; the report names each row and says why any was left alone."""
    action = request.POST.get("action", "")
    if action not in bulk_answers.VALUES:
        return refusal(request, InvalidRequest("choose Approve, Reject, Continue or Accept"))
    chosen: bulk_answers.BulkAction = action  # type: ignore[assignment]
    if request.POST.get("all"):
        query = request.POST.get("query", "")
        if problem := storable.text_problem(parse_qs(query)):  # a %00 inside the query
            return refusal(request, InvalidRequest(f"the inbox filter cannot be used: {problem}"))
        filters = InboxFilters.from_query(query)
        answerable = Interrupt.objects.visible_to(request.user, Action.ANSWER)
        found = filters.apply(answerable, assignment.Viewer.of(request.user))
        ids = bulk_answers.settleable(chosen, found.pending().iterator(chunk_size=200))
    else:
        ids = readable(request.user, request.POST.getlist("ids"))
    if not ids:
        return refusal(request, InvalidRequest(
            f"nothing to {chosen}: tick the rows first, or no row matching the filter "
            f"takes “{chosen}”"))
    try:
        outcomes = bulk_answers.bulk_answer(
            request.user, ids, bulk_answers.VALUES[chosen],
            steering=request.POST.get("steering", "").strip() or None, action=chosen)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    lines = bulk_report.report(outcomes, bulk_answers.VALUES[chosen], request.user)
    return render(request, "forgeui/inbox.html#bulk-results",
                  {"lines": lines, "accepted": sum(line.ok for line in lines)})


def readable(user: Any, ids: list[str]) -> list[str]:
    """The ticked ids, less those of rows ``user`` may not read: left out, unnamed."""
    if not filtered(user):
        return ids
    seen = set(Interrupt.objects.visible_to(user).filter(pk__in=ids)
               .values_list("pk", flat=True))
    return [found for found in ids if found in seen]


@require_POST
@requires(Action.ANSWER)
def claim(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """Claim (``op=claim``) or release (``op=release``) from a row; the row comes back."""
    interrupt_or_404(request.user, interrupt_id)
    release = request.POST.get("op") == "release"
    act = services.release_interrupt if release else services.claim_interrupt
    try:
        interrupt = act(request.user, interrupt_id)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    if not is_htmx(request):
        return redirect("forgeui:interrupt", interrupt_id=interrupt_id)
    return render(request, "forgeui/inbox.html#row",
                  {"row": row_for(request.user, assignment.Viewer.of(request.user), interrupt,
                                  RowFacts.of([interrupt]))})


@require_POST
@requires(Action.ASSIGN)
def assign(request: HttpRequest, interrupt_id: str) -> HttpResponse:
    """The supervisor's assignment picker on the interrupt page (ticked users and groups).

    A refusal (say, a user deleted meanwhile) comes back inside the page, choices kept.
    """
    interrupt = interrupt_or_404(request.user, interrupt_id)
    users, groups = request.POST.getlist("users"), request.POST.getlist("groups")
    try:
        services.assign_interrupt(request.user, interrupt_id, users, groups)
    except InvalidRequest as exc:
        panel = panel_context(interrupt, assignment.Viewer.of(request.user), user=request.user)
        picker = assign_choices(request, interrupt, users, groups, str(exc))
        return page(request, "forgeui/interrupt.html", "panel",
                    {"p": panel, "assign": picker,
                     "fork": forks.origin(interrupt.root_thread_id)}, status=422,
                    team=interrupt.team)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    return redirect("forgeui:interrupt", interrupt_id=interrupt_id)


def answered(request: HttpRequest, interrupt: Interrupt, where: str, status: int,
             **extra: Any) -> HttpResponse:
    """The row or panel after an answer attempt: done, stale (409) or refused (422)."""
    bound = extra.pop("bound", None)
    viewer = assignment.Viewer.of(request.user)
    panel = panel_context(interrupt, viewer, user=request.user, where=where, **extra)
    if bound is not None:
        panel["edit_form" if bound.prefix == "edit" else "schema_form"] = bound
    if where == "row":
        row = row_for(request.user, viewer, interrupt, RowFacts.of([interrupt]))
        if "error" in extra:  # the row itself again, with the message and the note kept
            row.update(error=extra["error"], note=panel["typed"].get("steering", ""))
            name = "forgeui/inbox.html#row"
        else:
            name = "forgeui/inbox.html#row-outcome"
        return render(request, name, {"p": panel, "row": row,
                                      **permissions(request, interrupt.team)}, status=status)
    context = {"p": panel}
    if where == "page":
        context["decision"] = context_for(request, interrupt)
        context["fork"] = forks.origin(interrupt.root_thread_id)
    else:  # a run-tree panel shows its context inside
        panel["decision"] = context_for(request, interrupt)
    return page(request, "forgeui/interrupt.html", "panel", context, status,
                team=interrupt.team)
