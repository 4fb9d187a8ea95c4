"""The one rule an answer must fit, whichever way it comes (page, bulk, API, resume map).

An interrupt that declares ``actions`` takes ``{"type": action, "args": ...}`` with one of
them (``args``: text for ``respond``, any JSON for ``edit``, null otherwise); one that
declares an ``answer_schema`` takes a value that schema accepts; one that declares both
is Agent Inbox's convention: the schema describes what an ``edit`` sends (its ``args``),
and accept, respond and ignore keep their fixed shapes. A schema that is itself invalid
(an old row, written before schemas were checked when the interrupt is created) accepts
nothing: the graph has to be fixed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jsonschema
import referencing.exceptions

from forgeui.runs import bounded_schemas, foreign

ACTION_KINDS = ("accept", "edit", "respond", "ignore")


class AnswerMismatch(ValueError):
    """The answer does not fit the interrupt; ``path`` locates the part that does not."""

    def __init__(self, message: str, path: list[str | int] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path or []


def declared_actions(payload: Any) -> list[str]:
    """The answer kinds a payload allows (``{"actions": [...]}``), in its own order."""
    actions = payload.get("actions") if isinstance(payload, dict) else None
    if not isinstance(actions, list):
        return []
    return [a for a in actions if a in ACTION_KINDS]


def declared_schema(payload: Any) -> Any:
    """The payload's ``answer_schema`` as given (None when it declares none)."""
    return payload.get("answer_schema") if isinstance(payload, dict) else None


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a usable JSON Schema, or None when it is."""
    if not isinstance(schema, dict):
        return f"answer_schema must be a JSON object, not {type(schema).__name__}"
    if not isinstance(schema.get("$schema", ""), str):
        return "answer_schema's $schema must be a string"
    try:
        _check_schema(json.dumps(schema, sort_keys=True))
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"answer_schema is not a valid JSON Schema at {where}: {exc.message}"
    return bounded_schemas.problem(schema)


def check(payload: Any, value: Any) -> None:
    """Raise ``AnswerMismatch`` unless ``value`` fits the interrupt's actions and schema
    (or, for Agent Inbox's and LangChain's requests, their own answer shape)."""
    problem = foreign.answer_problem(payload, value)
    if problem is not None:
        raise AnswerMismatch(problem)
    actions = declared_actions(payload)
    if actions:
        _check_action(actions, value)
    schema = declared_schema(payload)
    if schema is None:
        return
    problem = schema_problem(schema)
    if problem is not None:
        raise AnswerMismatch(f"this interrupt cannot be answered: its {problem}")
    checked, where = value, []
    if actions:  # the schema describes an edit's args; other responses carry no value
        if value["type"] != "edit":
            return
        checked, where = value.get("args"), ["args"]
    _check_schema_fit(schema, checked, where)


def _check_schema_fit(schema: dict[str, Any], value: Any, where: list[str | int]) -> None:
    try:
        error = jsonschema.exceptions.best_match(
            bounded_schemas.validator(schema).iter_errors(value))
    except referencing.exceptions.Unresolvable as exc:  # never fetched: refs stay local
        raise AnswerMismatch(f"this interrupt cannot be answered: its answer_schema refers "
                             f"to {exc}, which cannot be resolved") from None
    if error is not None:
        at = "$" + "".join(f".{part}" for part in where) + error.json_path[1:]
        raise AnswerMismatch(f"answer does not match the interrupt's schema at {at}: "
                             f"{error.message}", [*where, *error.absolute_path])


def _check_action(actions: list[str], value: Any) -> None:
    offered = ", ".join(actions)
    if not isinstance(value, dict) or set(value) - {"type", "args"} or "type" not in value:
        raise AnswerMismatch(f'this interrupt takes {{"type": action, "args": ...}} with an '
                             f"action of: {offered}")
    kind, args = value["type"], value.get("args")
    if kind not in actions:
        raise AnswerMismatch(f"this interrupt does not offer {kind!r} (it offers {offered})",
                             ["type"])
    if kind == "respond" and not (isinstance(args, str) and args.strip()):
        raise AnswerMismatch("a response needs some text in args", ["args"])
    if kind in ("accept", "ignore") and args is not None:
        raise AnswerMismatch(f"{kind!r} takes no args (null)", ["args"])


@lru_cache(maxsize=256)
def _check_schema(frozen: str) -> None:
    """Schemas repeat across a graph's interrupts: each distinct one is checked once (a
    failed check raises, so only good schemas are remembered)."""
    schema = json.loads(frozen)
    jsonschema.validators.validator_for(schema).check_schema(schema)
