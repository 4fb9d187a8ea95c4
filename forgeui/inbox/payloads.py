"""An interrupt's payload as a person reads it: heading, text, fields, proposal.

The keys a payload may use to talk to the reviewer (documented in the README):
``title`` (a heading), ``question``, ``description`` (markdown), ``action`` and ``args``
(the action an agent proposes, what ``edit`` starts from), ``actions`` and
``answer_schema`` (how it may be answered). Everything else is listed as fields, keys
such as ``deadline_s`` too (control options come only from ``ctx.interrupt`` keywords):
scalars as text, lists of scalars as lists, JSON only for nested values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from forgeui.inbox.markdown import render_markdown
from forgeui.runs import foreign
from forgeui.runs.wording import calls_heading, is_scalar

# Keys that say how to present or answer the payload, not what it is about.
PRESENTATION = ("title", "question", "description", "action", "args")
INSTRUCTIONS = ("actions", "answer_schema")
BREAKPOINT_KINDS = ("before", "after")
MAX_SCALAR_CHARS = 300


@dataclass(frozen=True, slots=True)
class Field:
    """One payload entry: ``text`` for a scalar, ``items`` for a list of scalars,
    ``json`` (indented) for anything nested."""

    key: str
    text: str = ""
    items: tuple[str, ...] = ()
    json: str = ""


@dataclass(frozen=True, slots=True)
class Presented:
    heading: str
    description: SafeString | None
    fields: list[Field] = field(default_factory=list)
    action: str = ""  # the proposed action's name, when the payload names one
    args: list[Field] = field(default_factory=list)
    breakpoint: str = ""  # "Paused before deploy" for a static breakpoint


def present(payload: Any, node: str, kind: str = "node") -> Presented:
    """How the interrupt page and the run tree show ``payload``."""
    if kind in BREAKPOINT_KINDS and isinstance(payload, dict):
        return present_breakpoint(payload, node, kind)
    calls = foreign.actions_of(payload)
    if not isinstance(payload, dict):
        return Presented(heading=calls_heading(calls) if calls else f"Interrupt at {node}",
                         description=None,
                         fields=[describe("value", payload)])
    description = payload.get("description")
    args = payload.get("args")
    return Presented(
        heading=(heading(payload) or (calls_heading(calls) if calls else "")
                 or f"Interrupt at {node}"),
        description=render_markdown(description) if isinstance(description, str) else None,
        fields=[describe(key, value) for key, value in payload.items()
                if key not in PRESENTATION and key not in INSTRUCTIONS],
        action=payload["action"] if isinstance(payload.get("action"), str) else "",
        args=fields_of(args),
    )


def present_breakpoint(payload: dict[str, Any], node: str, kind: str) -> Presented:
    where = "input" if kind == "before" else "output"
    sentence = f"Paused {kind} {payload.get('node') or node}"
    return Presented(heading=sentence, description=None, breakpoint=sentence,
                     fields=fields_of(payload.get(where), name=where))


def proposed_args(payload: Any) -> Any:
    """What an ``edit`` starts from: the payload's ``args`` (None when it has none)."""
    return payload.get("args") if isinstance(payload, dict) else None


def heading(payload: dict[str, Any]) -> str:
    """The payload's title, else its question, else nothing."""
    for key in ("title", "question"):
        if isinstance(payload.get(key), str) and payload[key].strip():
            return str(payload[key]).strip()
    return ""


def fields_of(value: Any, name: str = "args") -> list[Field]:
    """A dict's entries as fields; anything else as one field called ``name``."""
    if isinstance(value, dict):
        return [describe(key, item) for key, item in value.items()]
    return [] if value is None else [describe(name, value)]


def describe(key: str, value: Any) -> Field:
    if is_scalar(value):
        return Field(str(key), text=scalar_text(value))
    if isinstance(value, list) and all(is_scalar(item) for item in value):
        return Field(str(key), items=tuple(scalar_text(item) for item in value))
    return Field(str(key), json=json.dumps(value, indent=2, ensure_ascii=False, default=str))


def scalar_text(value: Any) -> str:
    """A scalar as a reader expects it: no JSON quotes, yes/no, an em dash for null."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    return text if len(text) <= MAX_SCALAR_CHARS else text[: MAX_SCALAR_CHARS - 1] + "…"
