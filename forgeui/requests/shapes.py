"""What an agent may send, and the run input and answer schema made from it.

An action proposes one tool call: ``{name, args, description?, decisions?, args_schema?,
sensitive?}``; ``sensitive`` names args (keys at any depth) shown whole only to those who
may answer, masked for everyone else.
A decision answers one action: ``{type: approve|edit|reject|respond, args?, message?}``;
``edit`` carries the edited ``args`` (checked against ``args_schema`` when there is one,
in bounded time: ``forgeui.runs.bounded_schemas``), ``respond`` a ``message``. The
interrupt's ``answer_schema`` says the same, so an answer that reaches the request another
way (bulk, the generic resume routes) fits it too.
"""

from __future__ import annotations

import json
from typing import Any

from forgeui.runs import bounded_schemas
from forgeui.runs.answer_rules import schema_problem
from forgeui.runs.exceptions import InvalidRequest

DECISIONS = ("approve", "edit", "reject", "respond")
ON_DEADLINE = ("reject", "approve")
DRAFT = "https://json-schema.org/draft/2020-12/schema"
MAX_SENSITIVE = 64  # keys per request, as ctx.interrupt(sensitive=...) takes
MAX_KEY = 200
FieldErrors = list[dict[str, Any]]


class DecisionsRefused(ValueError):
    """Decisions that do not fit their actions; ``errors`` as the API reports fields."""

    def __init__(self, errors: FieldErrors) -> None:
        super().__init__("; ".join(e["msg"] for e in errors))
        self.errors = errors


def allowed(action: dict[str, Any]) -> list[str]:
    return list(action.get("decisions") or DECISIONS)


def check_actions(actions: list[dict[str, Any]]) -> None:
    """Refuse unknown decision types and unusable ``args_schema``s, naming the field."""
    if not actions:
        raise InvalidRequest("a request proposes at least one action", ["body", "actions"])
    for index, action in enumerate(actions):
        loc: list[str | int] = ["body", "actions", index]
        unknown = [d for d in action.get("decisions") or [] if d not in DECISIONS]
        if unknown:
            raise InvalidRequest(f"unknown decision {unknown[0]!r}: use any of "
                                 f"{', '.join(DECISIONS)}", [*loc, "decisions"])
        if action.get("decisions") == []:
            raise InvalidRequest("offer at least one decision", [*loc, "decisions"])
        _check_sensitive(action.get("sensitive"), [*loc, "sensitive"])
        schema = action.get("args_schema")
        if schema is not None:
            problem = schema_problem(schema)
            if problem is not None:
                raise InvalidRequest(problem.replace("answer_schema", "args_schema"),
                                     [*loc, "args_schema"])


def _check_sensitive(keys: Any, loc: list[str | int]) -> None:
    if keys is None:
        return
    if not isinstance(keys, list) or len(keys) > MAX_SENSITIVE or not all(
            isinstance(key, str) and 1 <= len(key) <= MAX_KEY for key in keys):
        raise InvalidRequest(f"sensitive is a list of up to {MAX_SENSITIVE} arg names "
                             f"(1 to {MAX_KEY} characters each)", loc)


def sensitive_keys(actions: list[dict[str, Any]]) -> list[str]:
    """Every action's sensitive arg names, once each, in order: the request's interrupt
    masks them wherever they appear."""
    keys = list(dict.fromkeys(key for action in actions for key in action.get("sensitive")
                              or []))
    if len(keys) > MAX_SENSITIVE:
        raise InvalidRequest(f"at most {MAX_SENSITIVE} sensitive arg names in a request, "
                             f"all actions together", ["body", "actions"])
    return keys


def default_for(actions: list[dict[str, Any]], on_deadline: str) -> dict[str, Any]:
    """The answer a deadline gives: ``on_deadline`` for every action, which must offer it."""
    for index, action in enumerate(actions):
        if on_deadline not in allowed(action):
            raise InvalidRequest(f"on_deadline {on_deadline!r} is not among action {index}'s "
                                 f"decisions", ["body", "on_deadline"])
    return {"decisions": [{"type": on_deadline, "message": "no answer before the deadline"}
                          for _ in actions], "message": "no answer before the deadline"}


def answer_schema(actions: list[dict[str, Any]]) -> dict[str, Any]:
    """A JSON Schema of ``{decisions: [one per action], message?}``."""
    per_action = [{"anyOf": [_decision_schema(kind, action, index)
                             for kind in allowed(action)]}
                  for index, action in enumerate(actions)]
    return {"$schema": DRAFT, "type": "object", "required": ["decisions"],
            "additionalProperties": False,
            "properties": {"message": {"type": "string"},
                           "decisions": {"type": "array", "prefixItems": per_action,
                                         "minItems": len(actions), "maxItems": len(actions)}}}


def _decision_schema(kind: str, action: dict[str, Any], index: int) -> dict[str, Any]:
    properties: dict[str, Any] = {"type": {"const": kind}, "message": {"type": "string"}}
    required = ["type"]
    if kind == "edit":
        properties["args"] = _embedded(action.get("args_schema") or {}, index)
        required.append("args")
    if kind == "respond":
        properties["message"] = {"type": "string", "minLength": 1}
        required.append("message")
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def _embedded(schema: dict[str, Any], index: int) -> dict[str, Any]:
    """``args_schema`` as a resource of its own, so its ``#/...`` references stay its own;
    its ``$schema`` goes, as a dialect below the root would bypass the bounded checks."""
    if not schema:
        return schema
    kept = {key: value for key, value in schema.items() if key != "$schema"}
    return {**kept, "$id": f"urn:forge:args:{index}"}


def check_decisions(actions: list[dict[str, Any]], decisions: Any) -> None:
    """Raise ``DecisionsRefused`` with every field that does not fit, not just the first."""
    if not isinstance(decisions, list) or len(decisions) != len(actions):
        raise DecisionsRefused([_error(["body", "decisions"],
                                       f"send one decision per action ({len(actions)})")])
    errors: FieldErrors = []
    for index, (action, decision) in enumerate(zip(actions, decisions, strict=True)):
        errors += _decision_errors(action, decision, ["body", "decisions", index])
    if errors:
        raise DecisionsRefused(errors)


def _decision_errors(action: dict[str, Any], decision: Any,
                     loc: list[str | int]) -> FieldErrors:
    if not isinstance(decision, dict):
        return [_error(loc, "a decision is an object {type, args?, message?}")]
    kind = decision.get("type")
    if kind not in allowed(action):
        return [_error([*loc, "type"], f"{action.get('name', 'this action')} takes one of "
                                       f"{', '.join(allowed(action))}, not {kind!r}")]
    extra = set(decision) - {"type", "args", "message"}
    if extra:
        return [_error([*loc, sorted(extra)[0]], "unknown field")]
    if decision.get("message") is not None and not isinstance(decision["message"], str):
        return [_error([*loc, "message"], "a message is text")]
    if kind == "respond" and not str(decision.get("message") or "").strip():
        return [_error([*loc, "message"], "a response needs some text")]
    if kind == "edit":
        return _args_errors(action, decision.get("args"), [*loc, "args"])
    return []


def _args_errors(action: dict[str, Any], args: Any, loc: list[str | int]) -> FieldErrors:
    if "args" not in loc or args is None:
        return [_error(loc, "an edit sends the edited args")]
    schema = action.get("args_schema")
    if not schema:
        return []
    try:
        validator = bounded_schemas.validator(schema)
    except bounded_schemas.Unbounded as refused:  # a row stored before such were refused
        return [_error(loc, f"edits cannot be checked: {refused}".replace(
            "answer_schema", "args_schema"))]
    return [_error([*loc, *error.absolute_path], error.message)
            for error in sorted(validator.iter_errors(args), key=lambda e: list(e.path))]


def _error(loc: list[str | int], message: str) -> dict[str, Any]:
    return {"loc": loc, "msg": message, "type": "invalid"}


def body_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
