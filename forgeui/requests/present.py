"""A request as the interrupt page shows it: each proposed call with its own decision.

The form posts one set of fields per call (``decision-N``, ``args-N``, ``message-N``) and
an overall ``message``; ``read`` turns them into decisions, or gives the form back with
every field's error and everything that was typed. Calls that propose a text change
(``{"path", "old", "new"}``, or a unified diff under ``diff``) get a diff to read first.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.http import QueryDict
from django.utils.safestring import SafeString

from forgeui.inbox.markdown import render_markdown
from forgeui.inbox.payloads import Field, fields_of
from forgeui.models import AgentRequest, Interrupt
from forgeui.requests import shapes
from forgeui.requests.graph import GRAPH
from forgeui.runs import foreign
from forgeui.runs.wording import calls_words

LABELS = {"approve": "Approve", "edit": "Edit", "reject": "Reject", "respond": "Respond"}
MAX_DIFF_LINES = 400


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # add, del, ctx or hunk
    text: str


@dataclass
class Call:
    """One proposed call and what the reviewer chose (or typed) for it."""

    index: int
    name: str
    description: SafeString | None
    args: list[Field]
    decisions: list[tuple[str, str]]  # (value, label)
    args_json: str
    diff: list[DiffLine] = field(default_factory=list)
    diff_path: str = ""
    chosen: str = ""
    message: str = ""
    errors: list[str] = field(default_factory=list)
    edit_form: Any = None  # fields for a simple args_schema, set by the web pages


@dataclass
class RequestForm:
    agent: str
    session: str
    calls: list[Call]
    message: str = ""
    errors: list[str] = field(default_factory=list)
    graph_node: str = ""  # a graph's own pause (Agent Inbox, HITL middleware): its node


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What a reviewer needs to know about an agent's request beside its calls (the
    context card shows these, not the request's raw input and answer schema)."""

    agent: str
    token_agent: str  # the agent its token names, which may differ from the name it gave
    session: str
    callback_host: str  # where the decision is posted ("" when the agent polls)
    asked_at: datetime
    deadline_at: datetime | None
    on_deadline: str  # the default decision in words ("" when none)


def facts_of(interrupt: Interrupt) -> RequestFacts | None:
    """The facts of an agent's request (None for any other interrupt)."""
    if not is_agent_request(interrupt):
        return None
    row = (AgentRequest.objects.select_related("callback")
           .filter(pk=interrupt.root_thread_id).first())
    if row is None:
        return None
    url = urlsplit(row.callback.url) if row.callback is not None else None
    return RequestFacts(
        agent=row.agent, token_agent=row.token_agent, session=row.session,
        callback_host=url.netloc.rpartition("@")[2] if url is not None else "",
        asked_at=row.created_at, deadline_at=interrupt.deadline_at,
        on_deadline=default_words(interrupt) if interrupt.has_default else "")


def default_words(interrupt: Interrupt) -> str:
    """What the deadline decides: "every call rejected", or each call's decision."""
    default = interrupt.default
    decisions = default.get("decisions") if isinstance(default, dict) else None
    kinds = {d.get("type") for d in decisions or [] if isinstance(d, dict)}
    if decisions and len(kinds) == 1 and kinds <= {"approve", "reject"}:
        return f"every call {'approved' if kinds == {'approve'} else 'rejected'}"
    return calls_words(default, interrupt.payload)


def is_request(interrupt: Interrupt) -> bool:
    """An agent's approval request, or a graph's in Agent Inbox's or LangChain's shape."""
    return is_agent_request(interrupt) or is_foreign(interrupt)


def is_agent_request(interrupt: Interrupt) -> bool:
    return interrupt.run.graph == GRAPH and isinstance(interrupt.payload, dict)


def is_foreign(interrupt: Interrupt) -> bool:
    """A graph's pause in Agent Inbox's or ``HumanInTheLoopMiddleware``'s shape."""
    return not is_agent_request(interrupt) and foreign.actions_of(interrupt.payload) is not None


def actions_of(interrupt: Interrupt) -> list[dict[str, Any]]:
    if is_agent_request(interrupt):
        return list(interrupt.payload.get("calls") or [])
    return foreign.actions_of(interrupt.payload) or []


def form_for(interrupt: Interrupt) -> RequestForm | None:
    """The unfilled form, or None when the interrupt is not an approval request."""
    if not is_request(interrupt):
        return None
    agent = (interrupt.payload.get("agent") or {}) if is_agent_request(interrupt) else {}
    return RequestForm(agent=str(agent.get("name") or ""), session=str(agent.get("session")
                                                                        or ""),
                       calls=[call(i, a) for i, a in enumerate(actions_of(interrupt))],
                       graph_node=interrupt.node if is_foreign(interrupt) else "")


def call(index: int, action: dict[str, Any]) -> Call:
    description = action.get("description")
    found = Call(index=index, name=str(action.get("name", "")),
                 description=render_markdown(description) if description else None,
                 args=fields_of(action.get("args")),
                 decisions=[(d, LABELS[d]) for d in shapes.allowed(action)],
                 args_json=json.dumps(action.get("args"), indent=2, ensure_ascii=False))
    found.diff, found.diff_path = proposed_diff(action.get("args"))
    return found


def proposed_diff(args: Any) -> tuple[list[DiffLine], str]:
    """The text change a call proposes, as diff lines (none when it proposes none)."""
    if not isinstance(args, dict):
        return [], ""
    if isinstance(args.get("diff"), str):
        return parse_unified(args["diff"]), str(args.get("path") or "")
    if isinstance(args.get("old"), str) and isinstance(args.get("new"), str):
        path = str(args.get("path") or "")
        lines = difflib.unified_diff(args["old"].splitlines(), args["new"].splitlines(),
                                     f"a/{path}", f"b/{path}", lineterm="")
        return parse_unified("\n".join(lines)), path
    return [], ""


def parse_unified(text: str) -> list[DiffLine]:
    found = []
    for line in text.splitlines()[:MAX_DIFF_LINES]:
        if line.startswith(("+++", "---")):
            continue
        kind = ("hunk" if line.startswith("@@") else "add" if line.startswith("+")
                else "del" if line.startswith("-") else "ctx")
        found.append(DiffLine(kind, line))
    return found


def read(interrupt: Interrupt, post: QueryDict) -> tuple[RequestForm, list[dict[str, Any]]]:
    """The decisions the form sent, and the form as filled in; ``form.errors`` or a
    call's ``errors`` are set when they cannot be used (then the decisions are not)."""
    form = form_for(interrupt)
    assert form is not None
    form.message = post.get("message", "")
    decisions = [_decision(c, post) for c in form.calls]
    actions = actions_of(interrupt)
    if any(c.errors for c in form.calls):
        return form, []
    try:
        shapes.check_decisions(actions, decisions)
    except shapes.DecisionsRefused as refused:
        for error in refused.errors:
            at = error["loc"][2] if len(error["loc"]) > 2 else None
            target = form.calls[at].errors if isinstance(at, int) else form.errors
            target.append(_where(error["loc"][3:]) + error["msg"])
        return form, []
    return form, decisions


def _decision(c: Call, post: QueryDict) -> dict[str, Any]:
    c.chosen = post.get(f"decision-{c.index}", "")
    c.message = post.get(f"message-{c.index}", "")
    c.args_json = post.get(f"args-{c.index}", c.args_json)
    if not c.chosen:
        c.errors.append("choose a decision for this call")
        return {}
    decision: dict[str, Any] = {"type": c.chosen}
    if c.message.strip():
        decision["message"] = c.message.strip()
    if c.chosen == "edit":
        try:
            decision["args"] = json.loads(c.args_json)
        except ValueError as exc:
            c.errors.append(f"the edited args are not JSON: {exc}")
    return decision


def _where(loc: list[Any]) -> str:
    parts = [str(p) for p in loc if p != "args"]
    return f"{'.'.join(parts)}: " if parts else ""
