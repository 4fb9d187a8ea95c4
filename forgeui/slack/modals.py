"""The forms a button opens in Slack (``views.open``), and reading them back.

Reject and cancel ask for a reason, respond for a message; edit shows one field per
property of the call's ``args_schema`` (strings, numbers, booleans), or the arguments
as JSON when there is no such schema. A submission that does not fit is sent back to
the form with the field's error, before anything is decided.
"""

from __future__ import annotations

import json
from typing import Any

from forgeui.requests import shapes
from forgeui.slack import blocks

TITLES = {"reject": "Reject", "cancel": "Cancel the run", "respond": "Respond",
          "edit": "Edit the call"}
SIMPLE = {"string", "integer", "number", "boolean"}
CALLBACK_ID = "forge_form"


def view(verb: str, meta: dict[str, Any], action: dict[str, Any] | None) -> dict[str, Any]:
    """The modal for ``verb`` (reject, cancel, respond, edit); ``meta`` comes back with it."""
    if verb == "edit" and action is not None:
        inputs = edit_inputs(action)
    else:
        label = "Message" if verb == "respond" else "Reason"
        inputs = [text_input("text", label, "", optional=verb == "reject", multiline=True)]
    return {"type": "modal", "callback_id": CALLBACK_ID,
            "private_metadata": json.dumps(meta, separators=(",", ":")),
            "title": plain(TITLES[verb]), "submit": plain("Submit"), "close": plain("Back"),
            "blocks": inputs}


def edit_inputs(action: dict[str, Any]) -> list[dict[str, Any]]:
    args = action.get("args") if isinstance(action.get("args"), dict) else {}
    fields = simple_fields(action.get("args_schema"))
    if fields is None:
        shown = json.dumps(action.get("args"), ensure_ascii=False, indent=1)
        return [text_input("args", "Arguments (JSON)", shown, multiline=True)]
    schema = action["args_schema"]
    required = set(schema.get("required") or [])
    return [text_input(f"arg:{name}", str(spec.get("title") or name), shown_value(args.get(name)),
                       optional=name not in required, multiline=False)
            for name, spec in fields.items()]


def simple_fields(schema: Any) -> dict[str, dict[str, Any]] | None:
    """The schema's properties when each is a plain scalar; None when a form cannot show it."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties or len(properties) > 20:
        return None
    if not all(isinstance(s, dict) and s.get("type") in SIMPLE for s in properties.values()):
        return None
    return properties


def read(payload: dict[str, Any], action: dict[str, Any] | None
         ) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, str]]:
    """(meta, the decision or answer typed, errors by block id) of a submitted form."""
    meta, values = metadata(payload), state_values(payload)
    verb = meta.get("v")
    if verb == "edit":
        args, errors = edited_args(values, action)
        return meta, ({"type": "edit", "args": args} if not errors else None), errors
    text = str(values.get("text", "")).strip()
    if verb in ("cancel", "respond") and not text:
        return meta, None, {"text": "Please write something here."}
    decision: dict[str, Any] = {"type": verb}
    if text:
        decision["message"] = text
    return meta, decision, {}


def metadata(payload: dict[str, Any]) -> dict[str, Any]:
    """What ``view`` put in the form for its submission to name ({} when unreadable)."""
    try:
        meta = json.loads((payload.get("view") or {}).get("private_metadata") or "{}")
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def state_values(payload: dict[str, Any]) -> dict[str, str]:
    """Each input block's typed text, by block id."""
    found: dict[str, str] = {}
    state = ((payload.get("view") or {}).get("state") or {}).get("values") or {}
    for block, inputs in state.items():
        for element in (inputs or {}).values():
            found[str(block)] = str((element or {}).get("value") or "")
    return found


def edited_args(values: dict[str, str], action: dict[str, Any] | None
                ) -> tuple[Any, dict[str, str]]:
    """The arguments the form holds, checked against the call's schema."""
    schema = (action or {}).get("args_schema")
    fields = simple_fields(schema)
    if fields is None:
        try:
            args = json.loads(values.get("args", ""))
        except ValueError as exc:
            return None, {"args": f"Not JSON: {exc}"}
        return checked(args, action, "args")
    args = {}
    for name, spec in fields.items():
        raw = str(values.get(f"arg:{name}", "")).strip()
        if raw:
            try:
                args[name] = typed(raw, str(spec["type"]))
            except ValueError:
                return None, {f"arg:{name}": f"Expected a {spec['type']}."}
    return checked(args, action, None)


def checked(args: Any, action: dict[str, Any] | None, block: str | None
            ) -> tuple[Any, dict[str, str]]:
    """The request's own check of an edit (bounded schemas), its first error on the form."""
    if action is None:
        return args, {}
    try:
        shapes.check_decisions([action], [{"type": "edit", "args": args}])
    except shapes.DecisionsRefused as refused:
        error = refused.errors[0]
        loc = [part for part in error.get("loc", []) if isinstance(part, str)]
        name = loc[-1] if loc and loc[-1] != "args" else ""
        where = block or (f"arg:{name}" if name else f"arg:{first_field(action)}")
        return None, {where: str(error.get("msg", refused))}
    return args, {}


def first_field(action: dict[str, Any]) -> str:
    return next(iter(action["args_schema"]["properties"]))


def typed(raw: str, kind: str) -> Any:
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    if kind == "boolean":
        if raw.lower() not in ("true", "false", "yes", "no"):
            raise ValueError(raw)
        return raw.lower() in ("true", "yes")
    return raw


def shown_value(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def text_input(block_id: str, label: str, initial: str, optional: bool = False,
               multiline: bool = False) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": "value",
                               "multiline": multiline}
    if initial:
        element["initial_value"] = blocks.clip(initial, 3000)
    return {"type": "input", "block_id": block_id, "optional": optional,
            "label": plain(blocks.clip(label, 2000)), "element": element}


def plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": blocks.clip(text, 24)}
