"""For auditors: thread timelines, the audit log, decisions, checkpoints, exports."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import make_aware
from django.views.decorators.http import require_GET

from forgeui.inbox.rows import (
    PAGE_SIZE,
)
from forgeui.models import Answer, Approval, AuditEntry, ChainCheck, Event, Run, chain_check_every
from forgeui.permissions.roles import Action, team_q, teams_where
from forgeui.runs import timeline
from forgeui.runs.services.forking import links as forks
from forgeui.store import DjangoCheckpointStore
from forgeui.web import audit_lines, exports
from forgeui.web import decisions as answer_rows
from forgeui.web.views.common import (
    page,
    requires,
)
from forgeui.web.visibility import (
    filtered,
    graphs_for,
    masked_fork,
    may_answer_in,
    nobody,
    thread_or_404,
    tree_keys,
)

# A long thread's timeline is read a page at a time: each page replays only its records.
TIMELINE_PAGE = 50
TREE_PAGE = 100


def _timeline_or_404(thread_id: str, keys: frozenset[str]) -> list[timeline.Entry]:
    entries = timeline.entries(thread_id, keys=keys)
    if not entries:
        raise Http404(f"no thread {thread_id!r}")
    return entries


@require_GET
@requires(Action.READ)
def tree_history(request: HttpRequest, thread_id: str) -> HttpResponse:
    """One history for a whole run tree: every run's checkpoints interleaved by time."""
    runs = Run.objects.visible_to(request.user).of_tree(thread_id)
    if not runs.exists():
        raise Http404(f"no run tree {thread_id!r}")
    agents = sorted({run.sub_agent_id for run in runs if run.sub_agent_id})
    sub_agent = request.GET.get("agent", "")
    events = timeline.tree_history(thread_id, sub_agent if sub_agent in agents else "",
                                   timeline_keys(request.user, thread_id))
    context = {"thread_id": thread_id, "agents": agents, "agent": sub_agent,
               "page": Paginator(events, TREE_PAGE).get_page(request.GET.get("page"))}
    return render(request, "forgeui/tree_history.html", context)


def timeline_keys(user: Any, thread_id: str, export: bool = False) -> frozenset[str]:
    """404 unless ``user`` may read the thread; the keys to mask in its history (none for
    who may answer in its team, on the page; every sensitive key in an export)."""
    thread_or_404(user, thread_id)
    run = Run.objects.filter(thread_id=thread_id).values_list("team", "root_thread_id").first()
    if run is None or (not export and may_answer_in(user, run[0])):
        return frozenset()
    return tree_keys(run[1])


@require_GET
@requires(Action.READ)
def thread_timeline(request: HttpRequest, thread_id: str) -> HttpResponse:
    newest_first = request.GET.get("order") == "newest"
    keys = timeline_keys(request.user, thread_id)
    cursor = Event.objects.last_id()  # before the timeline is read, as on the inbox
    found = timeline.pages(thread_id, newest_first, keys)
    if not len(found):
        raise Http404(f"no thread {thread_id!r}")
    current = Paginator(found, TIMELINE_PAGE).get_page(request.GET.get("page"))
    entries = list(current.object_list)
    runs_here = Run.objects.filter(thread_id=thread_id).order_by("created_at")
    children = Run.objects.filter(parent_run__in=runs_here).order_by("created_at")
    context = {"thread_id": thread_id, "entries": entries, "page": current,
               "newest_first": newest_first, "run": runs_here.first(),
               "children": children, "fork": masked_fork(forks.origin(thread_id), keys),
               "forks": forks.forks_of(thread_id), "cursor": cursor}
    team = runs_here[0].team if runs_here else None
    return page(request, "forgeui/timeline.html", "entries", context, team=team)


@require_GET
@requires(Action.READ)
def thread_export(request: HttpRequest, thread_id: str) -> JsonResponse:
    entries = _timeline_or_404(thread_id, timeline_keys(request.user, thread_id, export=True))
    body = {"thread_id": thread_id, "checkpoints": [entry.as_dict() for entry in entries]}
    return download(body, f"timeline-{thread_id}.json")


def download(body: dict[str, Any], filename: str) -> JsonResponse:
    return JsonResponse(body, json_dumps_params={"indent": 2, "ensure_ascii": False},
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})


AUDIT_FILTERS = ("actor", "action", "object", "since", "until")


@require_GET
@requires(Action.READ)
def audit(request: HttpRequest) -> HttpResponse:
    user = request.user
    current = Paginator(audit_entries(request), PAGE_SIZE).get_page(request.GET.get("page"))
    rows = audit_lines.described(current, lambda team: may_answer_in(user, team))
    actions = AuditEntry.objects.visible_to(user).order_by().values_list("action", flat=True)
    context = {"page": current, "rows": list(rows),
               "query": {name: request.GET.get(name, "") for name in AUDIT_FILTERS},
               "actions": sorted(set(actions.distinct())),
               "teams_only": shown_teams(user), **chain_status()}
    return page(request, "forgeui/audit.html", "rows", context)


def shown_teams(user: Any) -> list[str]:
    """The teams whose entries a filtered reader sees ([] when they see every entry)."""
    if not filtered(user):
        return []
    return sorted(teams_where(user, Action.READ) or ())


def chain_status() -> dict[str, Any]:
    """The last walk over the chain, and how many entries were written after what it
    verified (those are not verified yet)."""
    chain = ChainCheck.objects.newest()
    newer = AuditEntry.objects.tip_seq() - chain.last_seq if chain else 0
    return {"chain": chain, "unverified": max(newer, 0),
            "verify_every": int(chain_check_every().total_seconds())}


AUDIT_COLUMNS = ["id", "created_at", "actor", "sign_in", "action", "summary", "object_type",
                 "object_id", "run_id", "thread_id", "before_checkpoint_id",
                 "after_checkpoint_id", "detail"]


@require_GET
@requires(Action.READ)
def audit_export(request: HttpRequest, fmt: str = "json") -> StreamingHttpResponse:
    """The filtered audit log as JSON or CSV, streamed in chunks."""
    found = audit_entries(request).iterator(chunk_size=500)
    described = audit_lines.described_in_chunks(found, whole=nobody)
    rows = (audit_dict(entry, line) for entry, line in described)
    if fmt == "csv":
        return exports.as_csv(AUDIT_COLUMNS, rows, "audit.csv")
    return exports.as_json(rows, "audit.json")


@require_GET
@requires(Action.READ)
def decisions(request: HttpRequest) -> HttpResponse:
    """Every answered interrupt: who, what, when, the answer and the note."""
    user = request.user
    filters = decision_filters(request)
    found = filters.apply(answer_rows.decisions(user))
    current = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    theirs = team_q(user, field="interrupt__team")
    answerers = {*_people(Answer.objects.filter(theirs, user__isnull=False)),
                 *_people(Approval.objects.filter(theirs))}  # whose vote counted
    rows = answer_rows.page_rows(current, lambda team: may_answer_in(user, team))
    context = {"page": current, "rows": rows,
               "filters": filters, "query": request.GET.urlencode(),
               "since": request.GET.get("since", ""), "until": request.GET.get("until", ""),
               "answerers": sorted(answerers), "graphs": graphs_for(user)}
    return page(request, "forgeui/decisions.html", "rows", context)


def _people(rows: Any) -> Any:
    return rows.order_by().values_list("user__username", flat=True).distinct()


@require_GET
@requires(Action.READ)
def decisions_export(request: HttpRequest, fmt: str = "json") -> StreamingHttpResponse:
    found = decision_filters(request).apply(answer_rows.decisions(request.user))
    rows = answer_rows.rows(found)
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
    thread_or_404(request.user, found.thread_id, f"no checkpoint {checkpoint_id!r}")
    timeline_url = reverse("forgeui:timeline", kwargs={"thread_id": found.thread_id})
    return redirect(f"{timeline_url}#cp-{checkpoint_id}")


def audit_entries(request: HttpRequest) -> Any:
    get = request.GET
    return AuditEntry.objects.visible_to(request.user).newest_first().matching(
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


def audit_dict(entry: AuditEntry, summary: str = "") -> dict[str, Any]:
    return {"id": entry.pk, "created_at": entry.created_at.isoformat(),
            "actor": entry.actor_name or None,  # as the chain holds it
            "sign_in": entry.sign_in,
            "action": entry.action, "summary": summary, "object_type": entry.object_type,
            "object_id": entry.object_id, "run_id": entry.run_id, "thread_id": entry.thread_id,
            "before_checkpoint_id": entry.before_checkpoint_id,
            "after_checkpoint_id": entry.after_checkpoint_id, "detail": entry.detail}
