"""Runs: the list, starting one, the run tree, and what supervisors do to a run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from forgeui.inbox.rows import (
    PAGE_SIZE,
)
from forgeui.models import AuditEntry, Event, Run, RunStatus
from forgeui.permissions.roles import Action, allowed
from forgeui.runs import decision_context, registry, services
from forgeui.runs.exceptions import (
    Forbidden,
    ForgeUIError,
    InvalidRequest,
    UnknownGraph,
)
from forgeui.runs.services.forking import links as forks
from forgeui.team import assignment
from forgeui.web import runtree
from forgeui.web.answer_panel import panel_context, pretty
from forgeui.web.forms import (
    MAX_NOTE_CHARS,
    AnswerRejected,
    note_text,
    parse_json,
    schema_form_class,
    schema_value,
)
from forgeui.web.views.common import (
    go_to,
    is_htmx,
    page,
    refusal,
    requires,
)
from forgeui.web.visibility import (
    decision_for,
    graphs_for,
    masked_runs,
    run_or_404,
    run_seen_or_404,
    thread_or_404,
)
from runtime.errors import ForgeError


@require_GET
@requires(Action.READ)
def runs(request: HttpRequest) -> HttpResponse:
    graph, status = request.GET.get("graph", ""), request.GET.get("status", "")
    found = (Run.objects.visible_to(request.user).roots()
             .select_related("started_by", "forked_by").order_by("-created_at"))
    found = found.filter(graph=graph) if graph else found
    found = found.filter(status=status) if status else found
    current = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    threads = [r.thread_id for r in current]
    origins, made = forks.origins(threads), forks.made_from(threads)
    for r in current:
        r.fork, r.forks = origins.get(r.thread_id), made.get(r.thread_id, [])
    context = {"page": current,
               "graph": graph, "status": status, "graphs": graphs_for(request.user),
               "statuses": [choice for choice, _ in Run._meta.get_field("status").choices]}
    if allowed(request.user, Action.START_RUN) and not is_htmx(request):
        context["start"] = start_context(request.GET.get("start", ""), user=request.user)
    return page(request, "forgeui/runs.html", "rows", context)


def start_context(graph: str, data: Any = None, error: str = "",
                  fixed: bool = False, user: Any = None) -> dict[str, Any]:
    """The start-run form for ``graph``: fields from its input_schema, else a JSON box.

    ``fixed`` (the graph's own page) offers no choice of graph; it survives a refusal.
    The graphs offered are those ``user`` may start runs of, in their teams.
    """
    names = graphs_for(user, Action.START_RUN)
    graph = graph if graph in names else (names[0] if names else "")
    schema, problem = None, ""
    try:
        schema = registry.get_executor(graph).input_schema if graph else None
    except ForgeUIError as exc:  # a broken registration: say so beside the form
        problem = str(exc)
    form_class = schema_form_class(schema)
    form = form_class(data, prefix="input") if form_class else None
    mode = (data.get("mode") if data else "") or ("form" if form else "json")
    fixed = fixed or bool(data and data.get("fixed"))
    return {"graph": graph, "graphs": names, "schema": schema, "form": form, "mode": mode,
            "fixed": fixed,
            "json": data.get("json_input", "") if data else "{}", "error": error or problem,
            "schema_json": pretty(schema) if schema else ""}


@require_GET
@requires(Action.START_RUN)
def start_form(request: HttpRequest) -> HttpResponse:
    """The start form again, for the graph just picked."""
    return render(request, "forgeui/runs.html#start-form",
                  {"start": start_context(request.GET.get("graph", ""), user=request.user)})


@require_POST
@requires(Action.START_RUN)
def start(request: HttpRequest) -> HttpResponse:
    """Start a run from the Runs page; the run's page opens, live."""
    data = request.POST
    context = start_context(data.get("graph", ""), data, user=request.user)
    try:
        if data.get("graph", "") != context["graph"]:  # start_context fell back to another
            raise UnknownGraph(data.get("graph", ""), context["graphs"])
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
    user = request.user
    run = Run.objects.visible_to(user).filter(pk=run_id).first() or queued_run(user, run_id)
    cursor = Event.objects.last_id()  # before the tree is read, as on the inbox
    return page(request, "forgeui/run.html", "tree",
                tree_context(run, request, cursor=cursor), team=run.team)


def queued_run(user: Any, run_id: str) -> Run:
    """A run started a moment ago whose task has not made it yet: shown as starting."""
    start = (AuditEntry.objects.visible_to(user)
             .filter(action="run.start", run_id=run_id).first())
    if start is None:
        raise Http404(f"no run {run_id!r}")
    return Run(run_id=run_id, thread_id=start.thread_id, root_thread_id=start.thread_id,
               graph=start.detail.get("graph", ""), status="queued", namespace=[],
               team=start.team)


def tree_context(run: Run, request: HttpRequest, **extra: Any) -> dict[str, Any]:
    """The run tree as ``request.user`` sees it: every run of a tree is of one team."""
    user, viewer = request.user, assignment.Viewer.of(request.user)
    tree = runtree.build(run.root_thread_id)
    nodes = tree.walk() if tree else []
    prefill = "answers" in runtree.fork_edits(tree) if tree else False
    masked_runs(user, run, nodes)
    for node in nodes:
        node.panels = [panel_context(interrupt, viewer, user=user, decision=decision_for(
                           user, interrupt, decision_context.for_interrupt(interrupt)))
                       for interrupt in node.pending]
        inputs = runtree.paused_inputs(node) if node.pending else {}
        for panel in node.panels:
            task_id = panel["interrupt"].task_id
            panel["fork_input"] = pretty(inputs[task_id]) if task_id in inputs else ""
            panel["prefill_answer"] = prefill
    svg, svg_problem = runtree.drawing(tree) if tree else ("", "")
    busy = run.status == "queued" or any(node.busy for node in nodes)
    return {"run": run, "tree": tree, "nodes": nodes, "busy": busy, **extra,
            "graph_svg": svg, "graph_problem": svg_problem,
            "fork": forks.origin(run.root_thread_id), "forks": forks.forks_of(run.root_thread_id),
            "note_limit": MAX_NOTE_CHARS}


@require_POST
@requires(Action.STEER)
def steer(request: HttpRequest, run_id: str) -> HttpResponse:
    return run_action(request, run_id, lambda: services.add_steering_note(
        request.user, run_id, note_text(request.POST.get("text", "")),
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
    run = run_or_404(request.user, run_id)
    interrupt_id = request.POST.get("interrupt_id", "")
    change = "answers" if request.POST.get("change") == "answer" else "inputs"
    text = request.POST.get("value", "")
    try:
        value = parse_json(text, "new input" if change == "inputs" else "answer")
        new_thread = services.fork_thread(request.user, run.root_thread_id,
                                          **{change: {interrupt_id: value}})
    except (AnswerRejected, InvalidRequest, Forbidden) as exc:  # shown beside what was typed
        error = {"interrupt_id": interrupt_id, "change": change, "text": text,
                 "message": str(exc)}
        return page(request, "forgeui/run.html", "tree",
                    tree_context(run, request, fork_error=error),
                    status=403 if isinstance(exc, Forbidden) else 422, team=run.team)
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
    run_seen_or_404(request.user, run_id)
    run = run_or_404(request.user, request.POST.get("page_run") or run_id)
    try:
        act()
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    if not is_htmx(request):
        return redirect("forgeui:run", run_id=run.run_id)
    context = tree_context(run, request, notice=done)
    for node in context["nodes"]:  # queued work: shown at once, redrawn once it is done
        if node.run.run_id == cancelling and node.live:
            node.mark_cancelling()
        if node.run.run_id == recovering and node.run.status in (RunStatus.FAILED,
                                                                   RunStatus.RUNNING):
            node.recovering = True
    context["busy"] = any(node.busy for node in context["nodes"])
    return page(request, "forgeui/run.html", "tree", context, team=run.team)


@require_POST
@requires(Action.FORK)
def fork(request: HttpRequest, thread_id: str) -> HttpResponse:
    thread_or_404(request.user, thread_id)
    try:
        new_thread = services.fork_thread(request.user, thread_id,
                                          request.POST.get("checkpoint_id") or None)
    except (ForgeUIError, ForgeError) as exc:
        return refusal(request, exc)
    target = reverse("forgeui:timeline", kwargs={"thread_id": new_thread})
    return go_to(request, target)
