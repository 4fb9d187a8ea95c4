"""The approval inbox's shared pieces: filters, row context and row fragments.

The page (``web.views.inbox_pages``) and the websocket (``consumers.InboxConsumer``) render rows
with the same partial, ``forgeui/inbox.html#row``, so a row pushed live is identical to
one rendered with the page. The websocket sends htmx out-of-band fragments: rows to
insert or delete, and the id of the newest event they reflect.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode

from django.http import QueryDict
from django.template.loader import render_to_string
from django.utils.html import escape

from forgeui.inbox import bidi
from forgeui.models import Answer, Interrupt, InterruptQuerySet, InterruptStatus
from forgeui.runs import bulk, foreign, registry, wording
from forgeui.runs.answer_rules import declared_actions, declared_schema, schema_problem
from forgeui.runs.policies import approvals
from forgeui.runs.services.forking import links as forks
from forgeui.runs.wording import interrupt_summary
from forgeui.team.assignment import Mode, Viewer, is_assigned, mode
from forgeui.team.sensitive import mask

PAGE_SIZE = 50
ROW_ACTIONS = ("accept", "ignore")  # one-click answers; edit and respond need a form
Sort = Literal["newest", "oldest", "deadline"]
Tab = Literal["all", "assigned", "queue", "done"]
TABS: list[tuple[Tab, str]] = [("all", "All pending"), ("assigned", "Assigned to me"),
                               ("queue", "Queue"), ("done", "Done by me")]
MODES: tuple[Mode, ...] = ("answer", "mine", "read", "refused")
# The read-only row with sensitive keys masked, for who may not answer in its team.
MASKED = "masked"


@dataclass(frozen=True, slots=True)
class InboxFilters:
    """What one inbox shows: the page's query string, shared with its websocket."""

    graph: str = ""
    sub_agent: str = ""
    namespace: str = ""  # a run-tree path prefix, "supervisor/research_agent"
    sort: Sort = "deadline"  # oldest first, those with a deadline before, soonest first
    tab: Tab = "all"
    q: str = ""  # full-text search over payload and run input

    @classmethod
    def from_query(cls, query: QueryDict | dict[str, list[str]] | str) -> InboxFilters:
        if isinstance(query, str):
            query = parse_qs(query)

        def first(name: str) -> str:
            value = query.get(name) or ""
            value = value[-1] if isinstance(value, list) else value
            return value.strip()[:200]

        sorts: dict[str, Sort] = {"oldest": "oldest", "newest": "newest"}
        sort = sorts.get(first("sort"), "deadline")
        tab = next((t for t, _ in TABS if t == first("tab")), "all")
        return cls(first("graph"), first("sub_agent"), first("namespace").strip("/"), sort,
                   tab, first("q"))

    @property
    def path(self) -> list[str]:
        return [part for part in self.namespace.split("/") if part]

    def apply(self, interrupts: InterruptQuerySet, viewer: Viewer) -> InterruptQuerySet:
        """``interrupts`` is every interrupt (with its run); the tab picks which."""
        if self.tab == "done":
            found = interrupts.done_by(viewer.user_id)
        elif self.tab == "assigned":
            found = interrupts.assigned_to(viewer)
        elif self.tab == "queue":
            found = interrupts.queue_for(viewer)
        else:
            found = interrupts.pending()
        found = (found.of_graph(self.graph).of_sub_agent(self.sub_agent)
                 .under_namespace(self.path).search(self.q))
        if self.sort == "deadline":
            return found.by_deadline()
        return found.by_age(newest_first=self.sort == "newest")

    def matches(self, interrupt: Interrupt, viewer: Viewer) -> bool:
        """The same test as ``apply``, for one row the websocket is about to push."""
        path = self.path
        return ((not self.graph or interrupt.run.graph == self.graph)
                and (not self.sub_agent or interrupt.sub_agent_id == self.sub_agent)
                and list(interrupt.namespace[: len(path)]) == path
                and self.in_tab(interrupt, viewer) and self.mentions(interrupt))

    def mentions(self, interrupt: Interrupt) -> bool:
        """``q`` for a pushed row: every word in its payload or input (the SQLite rule)."""
        if not self.q:
            return True
        text = (compact(interrupt.payload) + compact(interrupt.run.input)).lower()
        return all(word.lower() in text for word in self.q.split())

    def in_tab(self, interrupt: Interrupt, viewer: Viewer) -> bool:
        pending = interrupt.status == InterruptStatus.PENDING
        if self.tab == "done":
            return (interrupt.status == InterruptStatus.ANSWERED
                    and interrupt.answered_by_id == viewer.user_id)
        if self.tab == "assigned":
            mine = viewer.user_id is not None and interrupt.claimed_by_id == viewer.user_id
            return pending and (mine or is_assigned(viewer, interrupt.assignees))
        if self.tab == "queue":
            return pending and interrupt.claimed_by_id is None and mode(viewer, interrupt) != "read"
        return pending

    def querystring(self, **changes: str) -> str:
        fields = {"graph": self.graph, "sub_agent": self.sub_agent,
                  "namespace": self.namespace, "sort": self.sort, "tab": self.tab, "q": self.q,
                  **changes}
        fields["tab"] = "" if fields["tab"] == "all" else fields["tab"]
        return urlencode({key: value for key, value in fields.items() if value})

    @property
    def insert_swap(self) -> str:
        """Where a new (youngest) row goes: on top when newest come first."""
        return "afterbegin" if self.sort == "newest" else "beforeend"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False, default=str)


def answer_schema(payload: Any) -> dict[str, Any] | None:
    """The payload's schema when it is a valid one: an invalid one gets no form."""
    schema = declared_schema(payload)
    return schema if schema is not None and schema_problem(schema) is None else None


def asks_yes_no(payload: Any) -> bool:
    """Approve / Reject fit only an interrupt that declares no actions and no schema (and
    is no Agent Inbox or LangChain request, answered in its own shape)."""
    return (not declared_actions(payload) and declared_schema(payload) is None
            and foreign.actions_of(payload) is None)


def tab_links(filters: InboxFilters) -> list[dict[str, Any]]:
    return [{"tab": tab, "label": label, "current": tab == filters.tab,
             "query": filters.querystring(tab=tab)} for tab, label in TABS]


@dataclass(frozen=True, slots=True)
class RowFacts:
    """What rows show beyond their interrupt (fork links, the answer that closed it),
    looked up once for a page of rows or an event's every rendering."""

    origins: dict[str, forks.ForkLink]
    decisions: dict[str, Answer]
    tallies: dict[str, approvals.Tally]
    starters: dict[str, set[int]]  # of the rows under a policy: they may not approve them

    @classmethod
    def of(cls, interrupts: Any) -> RowFacts:
        listed = list(interrupts)
        tallies = approvals.tallies([i for i in listed if i.status == InterruptStatus.PENDING])
        return cls(forks.origins(i.root_thread_id for i in listed), accepted_answers(listed),
                   tallies, approvals.starters_of([i for i in listed if i.pk in tallies]))


def row_mode(viewer: Viewer, interrupt: Interrupt, facts: RowFacts) -> Mode:
    """``assignment.mode``, and "refused" where the row's policy would not count this
    viewer's answer: the row offers no button that would only be refused."""
    shown = mode(viewer, interrupt)
    tally = facts.tallies.get(interrupt.pk)
    if shown == "read" or tally is None or viewer.user_id is None:
        return shown
    person = approvals.Person(viewer.user_id, viewer.username, viewer.groups,
                              viewer.unrestricted)
    refused = approvals.why_not_counted(tally.policy, person, interrupt,
                                        facts.starters.get(interrupt.pk, set()))
    return "refused" if refused else shown


def row_context(interrupt: Interrupt, row_mode: Mode, facts: RowFacts | None = None,
                masked: bool = False) -> dict[str, Any]:
    """Everything ``inbox.html#row`` reads; no lazy queries, so it renders anywhere.

    ``row_mode`` is how the row looks to its viewer (``assignment.mode``): answer buttons
    and Claim, answer buttons and Release (their claim), or read-only. ``facts`` are
    looked up for this row alone when not given. ``masked``: the viewer may not answer
    in the row's team, so its sensitive keys are masked (``masked_copy``).
    """
    facts = facts or RowFacts.of([interrupt])
    decision = facts.decisions.get(interrupt.pk)
    if masked:
        interrupt, decision = masked_copy(interrupt), masked_answer(decision, interrupt)
    actions = declared_actions(interrupt.payload)
    return {
        "interrupt": interrupt,
        "fork": facts.origins.get(interrupt.root_thread_id),
        "decision": decision,
        "decision_summary": decision_words(interrupt, decision),
        "graph": interrupt.run.graph,
        "path": path_of(interrupt),
        "summary": interrupt_summary(interrupt),
        "quick_actions": [a for a in actions if a in ROW_ACTIONS],
        # Neither actions nor a schema: a yes/no question is the common case. A
        # breakpoint is only continued here; cancelling it needs a reason, on its page.
        "plain": asks_yes_no(interrupt.payload) and not interrupt.is_breakpoint,
        "breakpoint": interrupt.is_breakpoint,
        "settles": " ".join(a for a in bulk.VALUES if bulk.settles(a, interrupt)),
        "can_answer": (row_mode not in ("read", "refused")
                       and interrupt.status == InterruptStatus.PENDING),
        "mode": row_mode,
        "claimed_by": interrupt.claimed_by.get_username() if interrupt.claimed_by_id else "",
        "assignees": [*interrupt.assigned_users,
                      *(f"group {g}" for g in interrupt.assigned_groups)],
        "note_to": note_to(interrupt),
        "note": "", "error": "",  # given back when an answer from the row is refused
        "approvals": facts.tallies.get(interrupt.pk),
    }


def masked_copy(interrupt: Interrupt) -> Interrupt:
    """``interrupt`` with its sensitive keys masked in its payload and its run's input
    (the summary reads both); a copy, so the row itself stays whole."""
    keys = interrupt.sensitive or ()
    if not keys:
        return interrupt
    shown = copy.copy(interrupt)
    shown.payload = mask(interrupt.payload, keys)
    run = copy.copy(interrupt.run)
    run.input = mask(run.input, keys)
    shown.run = run
    return shown


def masked_answer(answer: Answer | None, interrupt: Interrupt) -> Answer | None:
    """The answer that closed ``interrupt`` with its sensitive keys masked (an edit's
    arguments may repeat them)."""
    keys = interrupt.sensitive or ()
    if answer is None or not keys:
        return answer
    shown = copy.copy(answer)
    shown.value = mask(answer.value, keys)
    shown.interrupt = masked_copy(interrupt)
    return shown


def decision_words(interrupt: Interrupt, decision: Answer | None) -> str:
    """The answer that closed the row, in words ("" while none is known)."""
    if decision is None:
        return ""
    return wording.decision_words(decision)


def note_to(interrupt: Interrupt) -> str:
    """Who reads a note given with this answer: the sub-agent, else the root run."""
    return interrupt.sub_agent_id or f"this run ({'/'.join(interrupt.namespace)})"


def path_of(interrupt: Interrupt) -> str:
    """The run-tree path; for an agent's approval request, who asks (agent · session)."""
    payload = interrupt.payload
    if interrupt.run.graph == registry.REQUEST_GRAPH and isinstance(payload, dict):
        agent = payload.get("agent") or {}
        return " · ".join(str(part) for part in (agent.get("name"), agent.get("session"))
                          if part) or "/".join(interrupt.namespace)
    return "/".join(interrupt.namespace)


def accepted_answers(interrupts: Any) -> dict[str, Answer]:
    """The answer each answered interrupt was closed with, by interrupt id."""
    answered = [i.pk for i in interrupts if i.status == InterruptStatus.ANSWERED]
    if not answered:
        return {}
    found: dict[str, Answer] = {}
    for answer in Answer.objects.filter(interrupt_id__in=answered).order_by("created_at"):
        found.setdefault(answer.interrupt_id, answer)
    return found


def render_row(interrupt: Interrupt, row_mode: Mode, facts: RowFacts | None = None,
               masked: bool = False) -> str:
    """One row for the websocket (pages get the same marking from their middleware)."""
    row = row_context(interrupt, row_mode, facts, masked)
    return bidi.mark(render_to_string("forgeui/inbox.html#row", {"row": row}))


def render_rows(interrupt: Interrupt, facts: RowFacts | None = None) -> dict[str, str]:
    """The row as each kind of viewer sees it, by mode (an ended one: read-only), and
    ``MASKED`` when it has sensitive keys."""
    facts = facts or RowFacts.of([interrupt])
    modes: tuple[Mode, ...] = ("read",)
    if interrupt.status == InterruptStatus.PENDING:  # no policy, no refusal
        modes = MODES if interrupt.pk in facts.tallies else MODES[:-1]
    rows: dict[str, str] = {m: render_row(interrupt, m, facts) for m in modes}
    if interrupt.sensitive:
        rows[MASKED] = render_row(interrupt, "read", facts, masked=True)
    return rows


def row_dom_id(interrupt_id: str) -> str:
    return f"int-{interrupt_id}"


def oob_upsert(row_html: str, interrupt_id: str, swap: str) -> str:
    """Insert a row. Table rows cannot stand alone in HTML, so the out-of-band element
    travels in a ``<template>`` (htmx swaps template contents); the page (forge.js)
    drops an older copy of the row first, so a replayed event never duplicates it. Only the
    row goes in: ``#inbox-rows`` opts out of the morph extension, which would insert the
    ``<tbody>`` too."""
    return f'<template><tbody hx-swap-oob="{swap}:#inbox-rows">{row_html}</tbody></template>'


def oob_replace(row_html: str) -> str:
    """Replace a row in place, where the page shows it (its id is the row's own)."""
    return '<template>' + row_html.replace("<tr ", '<tr hx-swap-oob="true" ', 1) + '</template>'


def oob_delete(interrupt_id: str) -> str:
    """Remove a row (the page skips this when it does not show that row)."""
    return (f'<template><tr id="{escape(row_dom_id(interrupt_id))}" hx-swap-oob="delete">'
            '</tr></template>')


def oob_cursor(event_id: int, element_id: str = "inbox-cursor") -> str:
    """The last event id the page has seen; sent back after a reconnect."""
    return f'<div id="{element_id}" data-event-id="{int(event_id)}" hx-swap-oob="true"></div>'
