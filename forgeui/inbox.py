"""The approval inbox's shared pieces: filters, row context and row fragments.

The page (``views.inbox``) and the websocket (``consumers.InboxConsumer``) render rows
with the same partial, ``forgeui/inbox.html#row``, so a row pushed live is identical to
one rendered with the page. The websocket sends htmx out-of-band fragments: rows to
insert or delete, and the id of the newest event they reflect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode

from django.http import QueryDict
from django.template.loader import render_to_string
from django.utils.html import escape

from .models import Interrupt, InterruptQuerySet

PAGE_SIZE = 50
SUMMARY_LENGTH = 140
ROW_ACTIONS = ("accept", "ignore")  # one-click answers; edit and respond need a form
Sort = Literal["newest", "oldest"]


@dataclass(frozen=True, slots=True)
class InboxFilters:
    """What one inbox shows: the page's query string, shared with its websocket."""

    graph: str = ""
    sub_agent: str = ""
    namespace: str = ""  # a run-tree path prefix, "supervisor/research_agent"
    sort: Sort = "newest"

    @classmethod
    def from_query(cls, query: QueryDict | dict[str, list[str]] | str) -> InboxFilters:
        if isinstance(query, str):
            query = parse_qs(query)

        def first(name: str) -> str:
            value = query.get(name) or ""
            value = value[-1] if isinstance(value, list) else value
            return value.strip()[:200]

        sort: Sort = "oldest" if first("sort") == "oldest" else "newest"
        return cls(first("graph"), first("sub_agent"), first("namespace").strip("/"), sort)

    @property
    def path(self) -> list[str]:
        return [part for part in self.namespace.split("/") if part]

    def apply(self, interrupts: InterruptQuerySet) -> InterruptQuerySet:
        return (interrupts.of_graph(self.graph).of_sub_agent(self.sub_agent)
                .under_namespace(self.path).by_age(newest_first=self.sort == "newest"))

    def matches(self, interrupt: Interrupt) -> bool:
        """The same test as ``apply``, for one row the websocket is about to push."""
        path = self.path
        return ((not self.graph or interrupt.run.graph == self.graph)
                and (not self.sub_agent or interrupt.sub_agent_id == self.sub_agent)
                and list(interrupt.namespace[: len(path)]) == path)

    def querystring(self) -> str:
        fields = {"graph": self.graph, "sub_agent": self.sub_agent,
                  "namespace": self.namespace, "sort": self.sort}
        return urlencode({key: value for key, value in fields.items() if value})

    @property
    def insert_swap(self) -> str:
        """Where a new (youngest) row goes: on top when newest come first."""
        return "afterbegin" if self.sort == "newest" else "beforeend"


def payload_summary(payload: Any) -> str:
    """One line for the row: the question if there is one, else compact JSON."""
    if isinstance(payload, dict) and isinstance(payload.get("question"), str):
        rest = {k: v for k, v in payload.items()
                if k not in ("question", "actions", "answer_schema")}
        text = payload["question"] + (" " + compact(rest) if rest else "")
    elif isinstance(payload, str):
        text = payload
    else:
        text = compact(payload)
    return text if len(text) <= SUMMARY_LENGTH else text[: SUMMARY_LENGTH - 1] + "…"


def compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False, default=str)


def declared_actions(payload: Any) -> list[str]:
    """The answer kinds a payload allows (``{"actions": [...]}``), in its own order."""
    actions = payload.get("actions") if isinstance(payload, dict) else None
    if not isinstance(actions, list):
        return []
    return [a for a in actions if a in ("accept", "edit", "respond", "ignore")]


def answer_schema(payload: Any) -> dict[str, Any] | None:
    schema = payload.get("answer_schema") if isinstance(payload, dict) else None
    return schema if isinstance(schema, dict) else None


def row_context(interrupt: Interrupt, can_answer: bool) -> dict[str, Any]:
    """Everything ``inbox.html#row`` reads; no lazy queries, so it renders anywhere."""
    actions = declared_actions(interrupt.payload)
    return {
        "interrupt": interrupt,
        "graph": interrupt.run.graph,
        "path": "/".join(interrupt.namespace),
        "summary": payload_summary(interrupt.payload),
        "quick_actions": [a for a in actions if a in ROW_ACTIONS],
        # Neither actions nor a schema: a yes/no question is the common case.
        "plain": not actions and answer_schema(interrupt.payload) is None,
        "can_answer": can_answer,
    }


def render_row(interrupt: Interrupt, can_answer: bool) -> str:
    return render_to_string("forgeui/inbox.html#row", {"row": row_context(interrupt, can_answer)})


def row_dom_id(interrupt_id: str) -> str:
    return f"int-{interrupt_id}"


def oob_upsert(row_html: str, interrupt_id: str, swap: str) -> str:
    """Insert a row. Table rows cannot stand alone in HTML, so the out-of-band element
    travels in a ``<template>`` (htmx swaps template contents); the page (forge.js)
    drops an older copy of the row first, so a replayed event never duplicates it."""
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
