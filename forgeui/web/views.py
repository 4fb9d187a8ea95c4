"""The dashboard's pages: inbox, interrupt, run tree, timeline, audit log.

Views stay short: queries are named QuerySet methods, changes go through
``forgeui.runs.services`` (the same layer as the API), and who may do what is
``forgeui.api.auth.allowed``. An htmx request gets just the fragment it swaps
(``"page.html#partial"``); a plain request gets the whole page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, time, timedelta
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import make_aware
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
from forgeui.models import Answer, AuditEntry, Event, Interrupt, InterruptStatus, Run, RunStatus
from forgeui.runs import decision_context, forks, registry, services, timeline
from forgeui.runs.answer_rules import declared_actions, declared_schema, schema_problem
from forgeui.runs.exceptions import (
    Forbidden,
    ForgeUIError,
    GraphUnavailable,
    InvalidRequest,
    NotFound,
    StaleAnswer,
    ThreadTaken,
)
from forgeui.store import DjangoCheckpointStore
from forgeui.team import assignment
from forgeui.team.roles import Action, allowed, roles_of
from forgeui.web import decisions as answer_rows
from forgeui.web import exports, runtree
from forgeui.web.forms import (
    MAX_JSON_CHARS,
    MAX_NOTE_CHARS,
    AnswerRejected,
    edit_form,
    parse_json,
    read_answer,
    schema_form_class,
    schema_value,
)
from runtime.errors import ForgeError

View = Callable[..., HttpResponse]
REFUSAL_STATUS = [(NotFound, 404), (Forbidden, 403), (StaleAnswer, 409), (ThreadTaken, 409),
                  (GraphUnavailable, 409), (ForgeUIError, 422),
                  (ForgeError, 409)]


def is_htmx(request: HttpRequest) -> bool:
    """A fragment request (history restores want the whole page)."""
    return (request.headers.get("HX-Request") == "true"
            and request.headers.get("HX-History-Restore-Request") != "true")


def go_to(request: HttpRequest, target: str) -> HttpResponse:
    """Send the browser to ``target``: htmx follows ``HX-Redirect``, a form a redirect."""
    if is_htmx(request):
        return HttpResponse(status=204, headers={"HX-Redirect": target})
    return redirect(target)


def requires(action: Action) -> Callable[[View], View]:
    """Log in first; then 403 unless the user's role allows ``action``."""
    def decorate(view: View) -> View:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not allowed(request.user, action):
                refused = Forbidden(f"your role does not allow {action}")
                if is_htmx(request):  # a notice above the page, not a page in a row
                    return refusal(request, refused)
                raise PermissionDenied(str(refused))
            return view(request, *args, **kwargs)
        return login_required(checked)
    return decorate


def page(request: HttpRequest, template: str, partial: str, context: dict[str, Any],
         status: int = 200) -> HttpResponse:
    """The whole page, or only ``partial`` of it for htmx."""
    name = f"{template}#{partial}" if is_htmx(request) else template
    return render(request, name, {**context, **permissions(request)}, status=status)


def permissions(request: HttpRequest) -> dict[str, Any]:
    user = request.user
    return {"can_answer": allowed(user, Action.ANSWER), "can_steer": allowed(user, Action.STEER),
            "can_assign": allowed(user, Action.ASSIGN),
            "can_fork": allowed(user, Action.FORK), "can_cancel": allowed(user, Action.CANCEL),
            "can_recover": allowed(user, Action.RECOVER),
            "roles": sorted(roles_of(user)) or (["admin"] if user.is_superuser else [])}


def refusal(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A service's refusal as a message with its HTTP status: the one mapping for pages."""
    status = next(code for kind, code in REFUSAL_STATUS if isinstance(exc, kind))
    response = render(request, "forgeui/base.html#refusal", {"message": str(exc)}, status=status)
    if is_htmx(request):  # shown above the page, whatever the form meant to swap
        response.headers["HX-Retarget"] = "#notices"
        response.headers["HX-Reswap"] = "innerHTML"
    return response


# -- inbox ------------------------------------------------------------------------------

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


# -- runs -------------------------------------------------------------------------------

@require_GET
@requires(Action.READ)
def runs(request: HttpRequest) -> HttpResponse:
    graph, status = request.GET.get("graph", ""), request.GET.get("status", "")
    found = Run.objects.roots().select_related("started_by").order_by("-created_at")
    found = found.filter(graph=graph) if graph else found
    found = found.filter(status=status) if status else found
    current = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    threads = [r.thread_id for r in current]
    origins, made = forks.origins(threads), forks.made_from(threads)
    for r in current:
        r.fork, r.forks = origins.get(r.thread_id), made.get(r.thread_id, [])
    context = {"page": current,
               "graph": graph, "status": status, "graphs": registry.graph_names(),
               "statuses": [choice for choice, _ in Run._meta.get_field("status").choices]}
    if allowed(request.user, Action.START_RUN) and not is_htmx(request):
        context["start"] = start_context(request.GET.get("start", ""))
    return page(request, "forgeui/runs.html", "rows", context)


def start_context(graph: str, data: Any = None, error: str = "") -> dict[str, Any]:
    """The start-run form for ``graph``: fields from its input_schema, else a JSON box."""
    names = registry.graph_names()
    graph = graph if graph in names else (names[0] if names else "")
    schema, problem = None, ""
    try:
        schema = registry.get_executor(graph).input_schema if graph else None
    except ForgeUIError as exc:  # a broken registration: say so beside the form
        problem = str(exc)
    form_class = schema_form_class(schema)
    form = form_class(data, prefix="input") if form_class else None
    mode = (data.get("mode") if data else "") or ("form" if form else "json")
    return {"graph": graph, "graphs": names, "schema": schema, "form": form, "mode": mode,
            "json": data.get("json_input", "") if data else "{}", "error": error or problem,
            "schema_json": pretty(schema) if schema else ""}


@require_GET
@requires(Action.START_RUN)
def start_form(request: HttpRequest) -> HttpResponse:
    """The start form again, for the graph just picked."""
    return render(request, "forgeui/runs.html#start-form",
                  {"start": start_context(request.GET.get("graph", ""))})


@require_POST
@requires(Action.START_RUN)
def start(request: HttpRequest) -> HttpResponse:
    """Start a run from the Runs page; the run's page opens, live."""
    data = request.POST
    context = start_context(data.get("graph", ""), data)
    try:
        value = start_input(context, data)
        started = services.start_run(request.user, context["graph"], value)
    except (AnswerRejected, ForgeUIError) as exc:
        context["error"] = str(exc)
        return render(request, "forgeui/runs.html#start-form", {"start": context}, status=422)
    target = reverse("forgeui:run", kwargs={"run_id": started.run_id})
    return go_to(request, target)


def start_input(context: dict[str, Any], data: Any) -> Any:
    form = context["form"]
    if context["mode"] == "form" and form is not None:
        if not form.is_valid():
            raise AnswerRejected("check the highlighted fields")
        return schema_value(form, context["schema"])
    return parse_json(data.get("json_input", ""), "input")


@require_GET
@requires(Action.READ)
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    run = Run.objects.filter(pk=run_id).first() or queued_run(run_id)
    cursor = Event.objects.last_id()  # before the tree is read, as on the inbox
    return page(request, "forgeui/run.html", "tree",
                tree_context(run, assignment.Viewer.of(request.user), cursor=cursor))


def queued_run(run_id: str) -> Run:
    """A run started a moment ago whose task has not made it yet: shown as starting."""
    start = AuditEntry.objects.filter(action="run.start", run_id=run_id).first()
    if start is None:
        raise Http404(f"no run {run_id!r}")
    return Run(run_id=run_id, thread_id=start.thread_id, root_thread_id=start.thread_id,
               graph=start.detail.get("graph", ""), status="queued", namespace=[])


def tree_context(run: Run, viewer: assignment.Viewer, **extra: Any) -> dict[str, Any]:
    tree = runtree.build(run.root_thread_id)
    nodes = tree.walk() if tree else []
    for node in nodes:
        node.panels = [panel_context(interrupt, viewer,
                                     decision=decision_context.for_interrupt(interrupt))
                       for interrupt in node.pending]
        inputs = runtree.paused_inputs(node) if node.pending else {}
        for panel in node.panels:
            panel["fork_input"] = pretty(inputs.get(panel["interrupt"].task_id))
    svg, svg_problem = runtree.drawing(tree) if tree else ("", "")
    busy = run.status == "queued" or any(node.busy for node in nodes)
    return {"run": run, "tree": tree, "nodes": nodes, "busy": busy, **extra,
            "graph_svg": svg, "graph_problem": svg_problem,
            "fork": forks.origin(run.root_thread_id), "forks": forks.forks_of(run.root_thread_id)}


@require_POST
@requires(Action.STEER)
def steer(request: HttpRequest, run_id: str) -> HttpResponse:
    return run_action(request, run_id, lambda: services.add_steering_note(
        request.user, run_id, request.POST.get("text", ""),
        interrupt_id=request.POST.get("interrupt_id") or None,
    ), "Steering note recorded.")


@require_POST
@requires(Action.CANCEL)
def cancel(request: HttpRequest, run_id: str) -> HttpResponse:
    return run_action(request, run_id, lambda: services.cancel_run(request.user, run_id),
                      "Cancellation requested.", cancelling=run_id)


@require_POST
@requires(Action.FORK)
def fork_with_changes(request: HttpRequest, run_id: str) -> HttpResponse:
    """Fork the run's tree with one paused node's input edited, or its answer pre-filled."""
    run = get_object_or_404(Run, pk=run_id)
    interrupt_id = request.POST.get("interrupt_id", "")
    change = "answers" if request.POST.get("change") == "answer" else "inputs"
    text = request.POST.get("value", "")
    try:
        value = parse_json(text, "new input" if change == "inputs" else "answer")
        new_thread = services.fork_thread(request.user, run.root_thread_id,
                                          **{change: {interrupt_id: value}})
    except (AnswerRejected, InvalidRequest) as exc:  # bad JSON, or a value refused
        error = {"interrupt_id": interrupt_id, "change": change, "text": text,
                 "message": str(exc)}
        return page(request, "forgeui/run.html", "tree",
                    tree_context(run, assignment.Viewer.of(request.user), fork_error=error),
                    status=422)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    target = reverse("forgeui:run", kwargs={"run_id": Run.objects.get(thread_id=new_thread).pk})
    return go_to(request, target)


@require_POST
@requires(Action.RECOVER)
def recover(request: HttpRequest, run_id: str) -> HttpResponse:
    return run_action(request, run_id, lambda: services.recover_run(request.user, run_id),
                      "Recovery started: the failed step runs again.", recovering=run_id)


def run_action(request: HttpRequest, run_id: str, act: Callable[[], object],
               done: str, cancelling: str = "", recovering: str = "") -> HttpResponse:
    """Do ``act``, then redraw the tree of the page the form was on (``page_run``)."""
    run = get_object_or_404(Run, pk=request.POST.get("page_run") or run_id)
    try:
        act()
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    if not is_htmx(request):
        return redirect("forgeui:run", run_id=run.run_id)
    context = tree_context(run, assignment.Viewer.of(request.user), notice=done)
    for node in context["nodes"]:  # queued work: shown at once, redrawn once it is done
        if node.run.run_id == cancelling and node.live:
            node.mark_cancelling()
        if node.run.run_id == recovering and node.run.status == RunStatus.FAILED:
            node.recovering = True
    context["busy"] = any(node.busy for node in context["nodes"])
    return page(request, "forgeui/run.html", "tree", context)


@require_POST
@requires(Action.FORK)
def fork(request: HttpRequest, thread_id: str) -> HttpResponse:
    try:
        new_thread = services.fork_thread(request.user, thread_id,
                                          request.POST.get("checkpoint_id") or None)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    target = reverse("forgeui:timeline", kwargs={"thread_id": new_thread})
    return go_to(request, target)


# -- timeline and audit -----------------------------------------------------------------

# A long thread's timeline is read a page at a time: each page replays only its records.
TIMELINE_PAGE = 50
TREE_PAGE = 100


def _timeline_or_404(thread_id: str) -> list[timeline.Entry]:
    entries = timeline.entries(thread_id)
    if not entries:
        raise Http404(f"no thread {thread_id!r}")
    return entries


@require_GET
@requires(Action.READ)
def tree_history(request: HttpRequest, thread_id: str) -> HttpResponse:
    """One history for a whole run tree: every run's checkpoints interleaved by time."""
    runs = Run.objects.of_tree(thread_id)
    if not runs.exists():
        raise Http404(f"no run tree {thread_id!r}")
    agents = sorted({run.sub_agent_id for run in runs if run.sub_agent_id})
    sub_agent = request.GET.get("agent", "")
    events = timeline.tree_history(thread_id, sub_agent if sub_agent in agents else "")
    context = {"thread_id": thread_id, "agents": agents, "agent": sub_agent,
               "page": Paginator(events, TREE_PAGE).get_page(request.GET.get("page"))}
    return render(request, "forgeui/tree_history.html", context)


@require_GET
@requires(Action.READ)
def thread_timeline(request: HttpRequest, thread_id: str) -> HttpResponse:
    newest_first = request.GET.get("order") == "newest"
    found = timeline.pages(thread_id, newest_first)
    if not len(found):
        raise Http404(f"no thread {thread_id!r}")
    current = Paginator(found, TIMELINE_PAGE).get_page(request.GET.get("page"))
    entries = list(current.object_list)
    runs_here = Run.objects.filter(thread_id=thread_id).order_by("created_at")
    children = Run.objects.filter(parent_run__in=runs_here).order_by("created_at")
    context = {"thread_id": thread_id, "entries": entries, "page": current,
               "newest_first": newest_first, "run": runs_here.first(),
               "children": children, "fork": forks.origin(thread_id),
               "forks": forks.forks_of(thread_id)}
    return page(request, "forgeui/timeline.html", "entries", context)


@require_GET
@requires(Action.READ)
def thread_export(request: HttpRequest, thread_id: str) -> JsonResponse:
    entries = _timeline_or_404(thread_id)
    body = {"thread_id": thread_id, "checkpoints": [entry.as_dict() for entry in entries]}
    return download(body, f"timeline-{thread_id}.json")


def download(body: dict[str, Any], filename: str) -> JsonResponse:
    return JsonResponse(body, json_dumps_params={"indent": 2, "ensure_ascii": False},
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})


AUDIT_FILTERS = ("actor", "action", "object", "since", "until")


@require_GET
@requires(Action.READ)
def audit(request: HttpRequest) -> HttpResponse:
    entries = audit_entries(request)
    context = {"page": Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page")),
               "query": {name: request.GET.get(name, "") for name in AUDIT_FILTERS},
               "actions": sorted(set(AuditEntry.objects.values_list("action", flat=True)))}
    return page(request, "forgeui/audit.html", "rows", context)


AUDIT_COLUMNS = ["id", "created_at", "actor", "action", "object_type", "object_id", "run_id",
                 "thread_id", "before_checkpoint_id", "after_checkpoint_id", "detail"]


@require_GET
@requires(Action.READ)
def audit_export(request: HttpRequest, fmt: str = "json") -> StreamingHttpResponse:
    """The filtered audit log as JSON or CSV, streamed in chunks."""
    rows = (audit_dict(entry) for entry in audit_entries(request).select_related("actor")
            .iterator(chunk_size=500))
    if fmt == "csv":
        return exports.as_csv(AUDIT_COLUMNS, rows, "audit.csv")
    return exports.as_json(rows, "audit.json")


@require_GET
@requires(Action.READ)
def decisions(request: HttpRequest) -> HttpResponse:
    """Every answered interrupt: who, what, when, the answer and the note."""
    filters = decision_filters(request)
    found = filters.apply(answer_rows.decisions())
    current = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    answerers = (Answer.objects.filter(user__isnull=False).order_by("user__username")
                 .values_list("user__username", flat=True).distinct())
    context = {"page": current, "rows": [answer_rows.row(a) for a in current],
               "filters": filters, "query": request.GET.urlencode(),
               "since": request.GET.get("since", ""), "until": request.GET.get("until", ""),
               "answerers": list(answerers), "graphs": registry.graph_names()}
    return page(request, "forgeui/decisions.html", "rows", context)


@require_GET
@requires(Action.READ)
def decisions_export(request: HttpRequest, fmt: str = "json") -> StreamingHttpResponse:
    rows = answer_rows.rows(decision_filters(request).apply(answer_rows.decisions()))
    if fmt == "csv":
        return exports.as_csv(answer_rows.COLUMNS, rows, "decisions.csv")
    return exports.as_json(rows, "decisions.json")


def decision_filters(request: HttpRequest) -> answer_rows.DecisionFilters:
    get = request.GET
    return answer_rows.DecisionFilters.from_query(
        get, when(get.get("since", "")), when(get.get("until", ""), end_of_day=True))


@require_GET
@requires(Action.READ)
def checkpoint(request: HttpRequest, checkpoint_id: str) -> HttpResponse:
    """An id from the audit log, opened where it sits: its thread's timeline."""
    found = DjangoCheckpointStore().load_by_id_sync(checkpoint_id)
    if found is None:
        raise Http404(f"no checkpoint {checkpoint_id!r}")
    timeline_url = reverse("forgeui:timeline", kwargs={"thread_id": found.thread_id})
    return redirect(f"{timeline_url}#cp-{checkpoint_id}")


def audit_entries(request: HttpRequest) -> Any:
    get = request.GET
    return AuditEntry.objects.newest_first().matching(
        actor=get.get("actor", "").strip(), action=get.get("action", "").strip(),
        obj=get.get("object", "").strip(), since=when(get.get("since", "")),
        until=when(get.get("until", ""), end_of_day=True),
    )


def when(text: str, end_of_day: bool = False) -> datetime | None:
    """A date or datetime filter; a bare ``until`` date includes that whole day."""
    text = text.strip()
    try:
        moment = parse_datetime(text) if text else None
        day = parse_date(text) if text and moment is None else None
    except ValueError:  # well-formed but impossible, like 2025-02-30
        return None
    if day is not None:
        moment = datetime.combine(day + timedelta(days=1) if end_of_day else day, time.min)
    if moment is not None and moment.tzinfo is None:
        moment = make_aware(moment)
    return moment


def audit_dict(entry: AuditEntry) -> dict[str, Any]:
    return {"id": entry.pk, "created_at": entry.created_at.isoformat(),
            "actor": entry.actor.get_username() if entry.actor else None,
            "action": entry.action, "object_type": entry.object_type,
            "object_id": entry.object_id, "run_id": entry.run_id, "thread_id": entry.thread_id,
            "before_checkpoint_id": entry.before_checkpoint_id,
            "after_checkpoint_id": entry.after_checkpoint_id, "detail": entry.detail}
