"""Decisions in words: an interrupt's one-line summary, and an answer as people say it.

Every place that shows a decision (inbox rows, the decisions list and its exports, the
audit log, timelines, bulk results) reads it from here, so they all say the same thing:
"Approve this transfer? · amount 500 · payee ACME → Approved". The raw JSON stays one
click away on the pages; these words never replace it in the stored data.

A summary is the payload's title, question or first description line, then the fields
the graph marked with ``ctx.interrupt(..., summary=("amount", "payee"))`` (a record of
the interrupt, never a payload key), else the first few scalar fields of the payload,
else of the run's input.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from forgeui.models import BREAKPOINT_KINDS, Answer, AnswerKind, Interrupt
from forgeui.runs import foreign

SUMMARY_LENGTH = 160
ANSWER_LENGTH = 160
CALLS_LENGTH = 480  # decisions on several calls: one clause each, not cut after the first
VALUE_LENGTH = 40  # one value inside a line
DEFAULT_FIELDS = 3
HEADING_KEYS = ("title", "question", "description")
# Keys that say how to present or answer a payload, not what it is about.
NOT_DATA = (*HEADING_KEYS, "action", "args", "actions", "answer_schema")
REASON_KEYS = ("reason", "note", "comment")


# -- summaries ----------------------------------------------------------------------

def interrupt_summary(interrupt: Interrupt) -> str:
    """The summary of an interrupt row (its ``run`` should be loaded with it)."""
    return summarize(interrupt.payload, interrupt.node, interrupt.kind,
                     interrupt.summary_fields, interrupt.run.input)


def record_summary(record: dict[str, Any], run_input: Any = None) -> str:
    """The summary of a runtime interrupt record (a checkpoint's ``interrupts`` entry)."""
    return summarize(record.get("payload"), str(record.get("node") or ""),
                     str(record.get("kind") or "node"), record.get("summary_fields"),
                     run_input)


def summarize(payload: Any, node: str, kind: str = "node",
              marked: Sequence[str] | None = None, run_input: Any = None) -> str:
    """One line saying what an interrupt asks, and about what."""
    if kind in BREAKPOINT_KINDS and isinstance(payload, dict):
        about = payload.get("input" if kind == "before" else "output")
        head = f"Paused {kind} {payload.get('node') or node}"
        return line(head, marked_fields(about, marked) or scalar_fields(about))
    if calls := foreign.actions_of(payload):
        return line(calls_heading(calls), calls_fields(calls))
    if isinstance(payload, dict):
        return line(*_dict_summary(payload, node, marked, run_input))
    if isinstance(payload, str) and payload.strip():
        return line(first_line(payload), scalar_fields(run_input))
    return line(node or "interrupt", [] if payload is None else [plain(payload)])


def _dict_summary(payload: dict[str, Any], node: str, marked: Sequence[str] | None,
                  run_input: Any) -> tuple[str, list[str]]:
    head = heading(payload)
    data = {key: value for key, value in payload.items() if key not in NOT_DATA}
    args = payload.get("args")
    fields = (marked_fields(payload, marked) or marked_fields(args, marked)
              or scalar_fields(data) or scalar_fields(args)
              or calls_fields(payload.get("calls")))  # an agent's request
    if head:
        return head, fields or scalar_fields(run_input)
    return f"{node}: {proposal(payload)}" if proposal(payload) else node, fields


def calls_heading(calls: list[dict[str, Any]]) -> str:
    """A request about tool calls is titled by its tools, as an agent's request is."""
    return f"Approve {', '.join(str(c.get('name') or '?') for c in calls)}?"


def calls_fields(calls: Any) -> list[str]:
    """Each proposed call as "tool: its args in brief"."""
    if not isinstance(calls, list):
        return []
    return [f"{c.get('name')}: {args_words(c.get('args'))}" for c in calls
            if isinstance(c, dict) and c.get("name")]


def args_words(args: Any) -> str:
    """A call's arguments in brief: its first scalar ones, else the whole value, short."""
    return ", ".join(scalar_fields(args)) or plain(args, VALUE_LENGTH)


def heading(payload: dict[str, Any]) -> str:
    """The payload's title, else its question, else its description's first line."""
    for key in HEADING_KEYS:
        if isinstance(payload.get(key), str) and payload[key].strip():
            return first_line(payload[key])
    return ""


def proposal(payload: dict[str, Any]) -> str:
    """What a headless payload offers: its proposed action, else its answer kinds."""
    action = payload.get("action")
    if isinstance(action, str) and action.strip():
        return action.strip()
    actions = payload.get("actions")
    if isinstance(actions, list) and all(isinstance(a, str) for a in actions):
        return " / ".join(actions)
    return ""


def marked_fields(about: Any, marked: Sequence[str] | None) -> list[str]:
    """The marked keys present in ``about``, in the order the graph named them."""
    if not marked or not isinstance(about, dict):
        return []
    return [f"{key} {plain(about[key], VALUE_LENGTH)}" for key in marked if key in about]


def scalar_fields(about: Any, limit: int = DEFAULT_FIELDS) -> list[str]:
    """Up to ``limit`` scalar entries of a dict, as "key value"."""
    if not isinstance(about, dict):
        return []
    found = [f"{key} {plain(value, VALUE_LENGTH)}" for key, value in about.items()
             if value is not None and value != "" and is_scalar(value)]
    return found[:limit]


def line(head: str, fields: list[str]) -> str:
    return shorten(" · ".join([head, *fields]), SUMMARY_LENGTH)


# -- answers ------------------------------------------------------------------------

def answer_words(value: Any, payload: Any = None, kind: str = "node", note: str = "") -> str:
    """An answer as a reviewer would say it: "Approved", "Rejected: reason",
    "Edited: to → lead@…". ``payload`` holds what an edit changed from; ``note`` (the
    steering note given with the answer) is the reason of a bare reject."""
    if kind in BREAKPOINT_KINDS:
        return shorten(_breakpoint_words(value, note.strip()), ANSWER_LENGTH)
    if per_call := calls_words(value, payload):
        return shorten(per_call, CALLS_LENGTH)
    return shorten(_words(value, payload, note.strip()), ANSWER_LENGTH)


def decision_words(answer: Answer) -> str:
    """What a person decided: the answer in words, or a cancel at a breakpoint with its
    reason."""
    if answer.kind == AnswerKind.CANCEL:
        return shorten(f"Cancelled at breakpoint: {answer.reason}", ANSWER_LENGTH)
    interrupt = answer.interrupt
    return answer_words(answer.value, interrupt.payload, interrupt.kind, answer.steering)


def decision_line(summary: str, answer: str) -> str:
    """What was asked and what was decided, in one line."""
    return f"{summary} → {answer}"


def _breakpoint_words(value: Any, note: str) -> str:
    """A breakpoint's answer is only recorded: the run goes on whatever it says."""
    if value in (True, None) or _kind_of(value) in ("accept", "continue"):
        return "Continued"
    return f"Continued (answer recorded: {_words(value, None, note)})"


def _words(value: Any, payload: Any, note: str) -> str:
    if value is True:
        return "Approved"
    if value is False:
        return f"Rejected: {note}" if note else "Rejected"
    if value is None:
        return "Answered with no value"
    if isinstance(value, dict):
        return _response_words(value, payload) or _verdict_words(value) or plain(value)
    if isinstance(value, str):
        return f"“{shorten(first_line(value), VALUE_LENGTH * 2)}”"
    return plain(value)


def _kind_of(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return str(value["type"])
    return ""


def _response_words(value: dict[str, Any], payload: Any) -> str:
    """Agent Inbox's responses: ``{"type": accept|edit|respond|ignore, "args": ...}``."""
    kind, args = _kind_of(value), value.get("args")
    if kind == "accept":
        return "Approved"
    if kind == "ignore":
        return "Ignored"
    if kind in ("respond", "response"):  # forge's spelling, and Agent Inbox's
        return f"Responded: {plain(args, VALUE_LENGTH * 2)}"
    if kind == "reject":
        reason = args if isinstance(args, str) else _reason(value)
        return f"Rejected: {shorten(reason, VALUE_LENGTH * 2)}" if reason else "Rejected"
    if kind == "edit":
        return _edit_words(args, payload.get("args") if isinstance(payload, dict) else None)
    return ""


def _edit_words(edited: Any, proposed: Any) -> str:
    if not isinstance(edited, dict) or not isinstance(proposed, dict):
        return f"Edited: {plain(edited, VALUE_LENGTH * 2)}"
    changes = [f"{key} → {plain(edited[key], VALUE_LENGTH // 2)}"
               for key in edited if proposed.get(key, _ABSENT) != edited[key]]
    changes += [f"{key} removed" for key in proposed if key not in edited]
    return "Edited: " + ", ".join(changes) if changes else "Edited, nothing changed"


_ABSENT = object()


def _verdict_words(value: dict[str, Any]) -> str:
    """A schema's answer that carries a yes/no (``{"approved": true, "limit": 100}``)."""
    verdict = value.get("approved")
    if not isinstance(verdict, bool):
        return ""
    reason = _reason(value)
    said = ("Approved" if verdict else "Rejected") + (f": {reason}" if reason else "")
    rest = [f"{key} {plain(item, VALUE_LENGTH)}" for key, item in value.items()
            if key != "approved" and key not in REASON_KEYS]
    return " · ".join([said, *rest])


def _reason(value: dict[str, Any]) -> str:
    for key in REASON_KEYS:
        if isinstance(value.get(key), str) and value[key].strip():
            return first_line(value[key])
    return ""


# -- decisions per call -------------------------------------------------------------

def calls_words(value: Any, payload: Any) -> str:
    """Decisions on a request's calls, one clause each: "issue_refund: Edited amount 40 →
    35; send_email: Approved" ("" when ``value`` is no such answer). The calls are an
    agent's request's, or a LangChain or Agent Inbox request's."""
    decisions, message = _call_decisions(value)
    calls = _proposed_calls(payload)
    if decisions is None or not calls:
        return ""
    said = "; ".join(f"{_call_name(calls, at, decision)}: {_call_words(decision, calls, at)}"
                     for at, decision in enumerate(decisions))
    return f"{said} · Note: {first_line(message)}" if message else said


def _call_decisions(value: Any) -> tuple[list[dict[str, Any]] | None, str]:
    """The per-call decisions of an answer, and the note sent with them."""
    if isinstance(value, dict) and isinstance(value.get("decisions"), list):
        decisions, message = value["decisions"], value.get("message")
    elif isinstance(value, list):  # Agent Inbox: one response per request
        decisions, message = value, None
    else:
        return None, ""
    if not decisions or not all(isinstance(d, dict) for d in decisions):
        return None, ""
    return decisions, message if isinstance(message, str) else ""


def _proposed_calls(payload: Any) -> list[dict[str, Any]]:
    if isinstance(payload, dict) and isinstance(payload.get("calls"), list):
        return [c for c in payload["calls"] if isinstance(c, dict)]
    return foreign.actions_of(payload) or []


def _call_name(calls: list[dict[str, Any]], at: int, decision: dict[str, Any]) -> str:
    if at < len(calls) and calls[at].get("name"):
        return str(calls[at]["name"])
    edited = decision.get("edited_action")
    return str(edited.get("name")) if isinstance(edited, dict) else f"call {at + 1}"


def _call_words(decision: dict[str, Any], calls: list[dict[str, Any]], at: int) -> str:
    kind = _kind_of(decision)
    said = {"approve": "Approved", "accept": "Approved", "reject": "Rejected",
            "ignore": "Ignored", "respond": "Responded", "response": "Responded"}.get(kind)
    if kind == "edit":
        proposed = calls[at].get("args") if at < len(calls) else None
        return shorten(_changes(_edited_args(decision), proposed), ANSWER_LENGTH)
    if said is None:
        return plain(decision, VALUE_LENGTH)
    reason = decision.get("message", decision.get("args"))
    return f"{said}: {plain(reason, VALUE_LENGTH * 2)}" if isinstance(reason, str) and \
        reason.strip() else said


def _edited_args(decision: dict[str, Any]) -> Any:
    """The edited arguments: forge's ``args``, LangChain's ``edited_action.args``, or
    Agent Inbox's ``args.args``."""
    edited = decision.get("edited_action")
    if isinstance(edited, dict):
        return edited.get("args")
    args = decision.get("args")
    if isinstance(args, dict) and isinstance(args.get("args"), dict) and "action" in args:
        return args["args"]
    return args


def _changes(edited: Any, proposed: Any) -> str:
    """"Edited amount 40 → 35, note → rush": each changed argument, from and to."""
    if not isinstance(edited, dict) or not isinstance(proposed, dict):
        return f"Edited to {plain(edited, VALUE_LENGTH)}"
    changes = [(f"{key} {plain(proposed[key], VALUE_LENGTH // 2)} → " if key in proposed
                else f"{key} → ") + plain(edited[key], VALUE_LENGTH // 2)
               for key in edited if proposed.get(key, _ABSENT) != edited[key]]
    changes += [f"{key} removed" for key in proposed if key not in edited]
    return "Edited " + ", ".join(changes) if changes else "Edited, nothing changed"


# -- values as text -----------------------------------------------------------------

def plain(value: Any, length: int = VALUE_LENGTH * 2) -> str:
    """Any JSON value, short and readable: no quotes on text, yes/no, lists with commas,
    objects as "key value" pairs, anything deeper as compact JSON."""
    if is_scalar(value):
        return shorten(scalar_text(value), length)
    if isinstance(value, list) and all(is_scalar(item) for item in value):
        return shorten(", ".join(scalar_text(item) for item in value), length)
    if isinstance(value, dict) and all(is_scalar(item) for item in value.values()):
        return shorten(", ".join(f"{key} {scalar_text(item)}" for key, item in value.items()),
                       length)
    return shorten(json.dumps(value, ensure_ascii=False, separators=(", ", ": "),
                              sort_keys=True, default=str), length)


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def scalar_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return first_line(value) if isinstance(value, str) else str(value)


def first_line(text: str) -> str:
    """The first non-blank line, its runs of spaces made one."""
    for part in text.strip().splitlines():
        if part.strip():
            return " ".join(part.split())
    return ""


def shorten(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"
