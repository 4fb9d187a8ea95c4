"""Turning what a person typed or clicked into an interrupt's answer value.

An interrupt payload decides how it may be answered:

- ``"answer_schema"``: a form generated from simple JSON-Schema (boolean, integer and
  number with minimum/maximum, string, enum), falling back to the JSON box for anything
  richer; the value is then exactly what the schema describes.
- ``"actions"``: Agent Inbox's responses (``forgeui.runs.answer_rules``); the value is
  ``{"type": action, "args": ...}`` with ``args`` the free text for ``respond``, the edited
  proposal for ``edit`` (a form prefilled from the payload's ``args`` when
  ``answer_schema`` is simple, else JSON) and null otherwise.
- neither: approve / reject (``true`` / ``false``) or any JSON typed in the answer box.
- a static breakpoint: continue (``true``, recorded as its answer) only; its node runs
  whatever the answer says, so stopping it is a cancel with a reason, not an answer.

An agent's approval request edits each proposed call's args with the same schema form
when its ``args_schema`` is a simple object (``read_request``), else as JSON.

The services validate the value again against the schema; this module only gives people
field-level messages before that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict

from forgeui.inbox.payloads import proposed_args
from forgeui.inbox.rows import answer_schema, asks_yes_no
from forgeui.models import Interrupt
from forgeui.requests import present
from forgeui.requests.shapes import allowed
from forgeui.runs.answer_rules import declared_actions
from forgeui.runs.exceptions import InvalidRequest

MAX_JSON_CHARS = 64 * 1024
MAX_NOTE_CHARS = 4000
SCALARS = {"boolean", "integer", "number", "string"}


class AnswerRejected(ValueError):
    """The submitted answer cannot be read; ``form`` carries field errors, if any."""

    def __init__(self, message: str, form: forms.Form | None = None) -> None:
        super().__init__(message)
        self.form = form


@dataclass(frozen=True, slots=True)
class GivenAnswer:
    value: Any
    steering: str


def schema_form_class(schema: dict[str, Any] | None) -> type[forms.Form] | None:
    """A form for a simple schema (an object of scalars, or one scalar); else None."""
    if not schema:
        return None
    if schema.get("type") == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            return None
        if not all(simple(prop) for prop in properties.values()):
            return None
        required = set(schema.get("required") or [])
        fields = {name: field_for(prop, name in required, name)
                  for name, prop in properties.items()}
    elif simple(schema):
        fields = {"value": field_for(schema, True, "answer")}
    else:
        return None
    return type("SchemaAnswerForm", (forms.Form,), fields)


def simple(prop: Any) -> bool:
    return isinstance(prop, dict) and (
        isinstance(prop.get("enum"), list) or prop.get("type") in SCALARS
    )


def field_for(prop: dict[str, Any], required: bool, name: str) -> forms.Field:
    """One form field for one JSON-Schema property."""
    common: dict[str, Any] = {"required": required, "label": prop.get("title") or name,
                              "help_text": prop.get("description", "")}
    if isinstance(prop.get("enum"), list):
        options = prop["enum"]
        return forms.TypedChoiceField(
            choices=[("", "—"), *((str(i), option_label(o)) for i, o in enumerate(options))],
            coerce=lambda index: options[int(index)], empty_value=None, **common)
    kind = prop.get("type")
    bounds = {"min_value": prop.get("minimum"), "max_value": prop.get("maximum")}
    if kind == "boolean":
        return forms.TypedChoiceField(
            choices=[("", "—"), ("true", "Yes"), ("false", "No")],
            coerce=lambda text: text == "true", empty_value=None, **common)
    if kind == "integer":
        return forms.IntegerField(**bounds, **common)
    if kind == "number":
        return forms.FloatField(**bounds, **common)
    longest = prop.get("maxLength")
    # Room for several lines when the schema allows more than a line's worth (an address
    # or a date, which have a format, take one line).
    widget = (forms.Textarea(attrs={"rows": 5})
              if (not longest or longest > 200) and "format" not in prop else None)
    return forms.CharField(strip=False, min_length=prop.get("minLength"),
                           max_length=longest, widget=widget, **common)


def option_label(option: Any) -> str:
    """An enum option as a person reads it: strings without their JSON quotes."""
    return option if isinstance(option, str) else json.dumps(option, ensure_ascii=False)


def initial_values(schema: dict[str, Any] | None, value: Any) -> dict[str, Any]:
    """A schema form's initial data from a value it would produce (an edit's start)."""
    if not schema:
        return {}
    if schema.get("type") == "object":
        properties = schema.get("properties") or {}
        given = value if isinstance(value, dict) else {}
        return {name: initial_of(prop, given[name]) for name, prop in properties.items()
                if name in given}
    return {"value": initial_of(schema, value)}


def initial_of(prop: dict[str, Any], value: Any) -> Any:
    options = prop.get("enum")
    if isinstance(options, list):
        return str(options.index(value)) if value in options else ""
    if prop.get("type") == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    return value


def edit_form(payload: Any, data: QueryDict | None = None) -> forms.Form | None:
    """The edit form for a payload with ``edit`` and a simple schema, prefilled from its
    ``args`` (bound to ``data`` when given); None when edits are typed as JSON."""
    schema = answer_schema(payload)
    form_class = schema_form_class(schema)
    if form_class is None or "edit" not in declared_actions(payload):
        return None
    if data is not None:
        return form_class(data, prefix="edit")
    return form_class(prefix="edit", initial=initial_values(schema, proposed_args(payload)))


def call_edit_form(action: dict[str, Any], scope: str, index: int,
                   data: QueryDict | None = None) -> forms.Form | None:
    """The form editing one proposed call's args, prefilled from them, when its
    ``args_schema`` is a simple object that names every arg; else None (JSON)."""
    schema = action.get("args_schema")
    args = action.get("args")
    if ("edit" not in allowed(action) or not isinstance(schema, dict)
            or schema.get("type") != "object" or not isinstance(args, dict | None)):
        return None
    form_class = schema_form_class(schema)
    if form_class is None or set(args or {}) - set(schema["properties"]):
        return None  # a form would drop the args it has no field for
    names = {"prefix": f"args-{index}", "auto_id": f"edit-{scope}-%s",
             "initial": initial_values(schema, args)}
    return form_class(data, **names) if data is not None else form_class(**names)


def with_edit_forms(form: present.RequestForm | None,
                    interrupt: Interrupt) -> present.RequestForm | None:
    """``form`` with each call's edit form, prefilled."""
    if form is not None:
        for call, action in zip(form.calls, present.actions_of(interrupt), strict=True):
            call.edit_form = call_edit_form(action, interrupt.pk, call.index)
    return form


def read_request(interrupt: Interrupt,
                 post: QueryDict) -> tuple[present.RequestForm, list[dict[str, Any]]]:
    """``present.read`` with the edits typed into forms: a valid form stands for the
    call's JSON args; an invalid one chosen, or one changed under Approve, refuses the
    whole submission."""
    actions = present.actions_of(interrupt)
    edits = [call_edit_form(action, interrupt.pk, index, post)
             for index, action in enumerate(actions)]
    data = post.copy()
    for index, (action, edit) in enumerate(zip(actions, edits, strict=True)):
        if edit is not None and edit.is_valid():
            data[f"args-{index}"] = json.dumps(schema_value(edit, action["args_schema"]))
    form, decisions = present.read(interrupt, data)
    refused = False
    for call, edit in zip(form.calls, edits, strict=True):
        call.edit_form = edit
        problem = edit_problem(call.chosen, edit)
        if problem:
            call.errors.append(problem)
            refused = True
    return form, [] if refused else decisions


def edit_problem(chosen: str, edit: forms.Form | None) -> str:
    if edit is None:
        return ""
    if chosen == "edit" and not edit.is_valid():
        return "check the highlighted fields of the edit"
    if chosen == "approve" and edit.has_changed():  # approving would send the originals
        return ("you changed the args but chose Approve, which sends them unchanged: "
                "choose Edit to send your changes")
    return ""


def schema_value(form: forms.Form, schema: dict[str, Any]) -> Any:
    """The cleaned form as the schema's value (absent optional fields left out)."""
    if schema.get("type") != "object":
        return form.cleaned_data["value"]
    required = set(schema.get("required") or [])
    return {name: value for name, value in form.cleaned_data.items()
            if name in required or value not in (None, "")}


def note_text(text: str) -> str:
    """A steering note typed on a page, held to the answer form's cap; ``InvalidRequest``
    (a 422 on the page) if longer: every later page of the run shows it."""
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidRequest(f"the steering note is longer than {MAX_NOTE_CHARS} characters")
    return text


def read_answer(payload: Any, data: QueryDict, breakpoint: bool = False) -> GivenAnswer:
    """The answer a submitted form means; ``AnswerRejected`` with a message if none."""
    steering = data.get("steering", "").strip()
    if len(steering) > MAX_NOTE_CHARS:
        raise AnswerRejected(f"the steering note is longer than {MAX_NOTE_CHARS} characters")
    action = data.get("action", "")
    if breakpoint:
        return GivenAnswer(continue_value(action), steering)
    return GivenAnswer(value_of(payload, action, data), steering)


def continue_value(action: str) -> bool:
    """A breakpoint's one answer; anything else would be recorded and not obeyed."""
    if action != "continue":
        raise AnswerRejected("a breakpoint is continued, or its run cancelled with a reason; "
                             "it takes no other answer")
    return True


def value_of(payload: Any, action: str, data: QueryDict) -> Any:
    actions = declared_actions(payload)
    schema = answer_schema(payload)
    if action in ("accept", "ignore", "respond", "edit"):
        if action not in actions:
            raise AnswerRejected(f"this interrupt does not offer {action!r}")
        return {"type": action, "args": action_args(payload, action, data)}
    if action in ("approve", "reject"):
        if not asks_yes_no(payload):
            raise AnswerRejected("this interrupt asks for a specific answer, not yes/no")
        return action == "approve"
    if action == "form":
        return form_value(schema, data)
    if action == "json":
        return parse_json(data.get("json_value", ""), "answer")
    raise AnswerRejected("choose how to answer")


def action_args(payload: Any, action: str, data: QueryDict) -> Any:
    if action == "respond":
        text = data.get("text", "").strip()
        if not text:
            raise AnswerRejected("a response needs some text")
        return text
    if action == "edit":
        form = edit_form(payload, data)
        if form is None:
            return parse_json(data.get("edit_json", ""), "edited value")
        if not form.is_valid():
            raise AnswerRejected("check the highlighted fields of the edit", form)
        schema = answer_schema(payload)
        assert schema is not None  # edit_form found a form for it
        return schema_value(form, schema)
    return None


def form_value(schema: dict[str, Any] | None, data: QueryDict) -> Any:
    form_class = schema_form_class(schema)
    if form_class is None or schema is None:
        raise AnswerRejected("this interrupt has no answer form; use the JSON answer")
    form = form_class(data, prefix="answer")
    if not form.is_valid():
        raise AnswerRejected("check the highlighted fields below", form)
    return schema_value(form, schema)


def parse_json(text: str, what: str) -> Any:
    """Strict JSON (no NaN or Infinity, no key twice in an object), with the line and
    column of a mistake."""
    if not text.strip():
        raise AnswerRejected(f"the {what} is empty; type JSON such as true, 42 or {{}}")
    if len(text) > MAX_JSON_CHARS:
        raise AnswerRejected(f"the {what} is longer than {MAX_JSON_CHARS} characters")
    try:
        return json.loads(text, parse_constant=_refuse_constant,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise AnswerRejected(f"the {what} is not valid JSON: {exc.msg} "
                             f"(line {exc.lineno}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise AnswerRejected(f"the {what} is not valid JSON: {exc}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object; a key typed twice is refused rather than the last one silently kept."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key[:40]!r} appears twice in one object")
        found[key] = value
    return found
