"""The limits every approval request meets, however it comes: ``POST /api/requests``
(whose body parser and schema apply them first) or an MCP tool call (which has neither).

The numbers are the API's (``forgeui.api.parser``, which this layer may not import); a
test keeps them equal.
"""

from __future__ import annotations

import json
from typing import Any

from forgeui.runs.exceptions import InvalidRequest

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NAME = 200
MAX_ACTIONS = 50
MAX_SAFE_INTEGER = 2**53 - 1


def check(body: dict[str, Any]) -> None:
    """Raise ``InvalidRequest`` unless ``body`` is within the API's limits."""
    try:
        size = len(json.dumps(body, allow_nan=False).encode())
    except ValueError:
        raise InvalidRequest("NaN and Infinity are not JSON; send a number or null",
                             ["body"]) from None
    if size > MAX_BODY_BYTES:
        raise InvalidRequest(f"the request is {size} bytes as JSON; the limit is "
                             f"{MAX_BODY_BYTES}", ["body"])
    actions = body.get("actions") or []
    if not 1 <= len(actions) <= MAX_ACTIONS:
        raise InvalidRequest(f"send 1 to {MAX_ACTIONS} actions", ["body", "actions"])
    for index, action in enumerate(actions):
        name = action.get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME:
            raise InvalidRequest(f"an action's name has 1 to {MAX_NAME} characters",
                                 ["body", "actions", index, "name"])
    check_value(body)


def check_value(value: Any) -> None:
    """Depth, integers, strings and keys, walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if abs(item) > MAX_SAFE_INTEGER:
                raise InvalidRequest(f"an integer is beyond ±{MAX_SAFE_INTEGER} (send it as "
                                     "a string)", ["body"])
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise InvalidRequest(f"JSON nested deeper than {MAX_DEPTH} levels", ["body"])
            if isinstance(item, dict):
                for key in item:
                    _check_text(str(key))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise InvalidRequest("NUL characters (\\u0000) are not accepted", ["body"])
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("lone surrogate escapes are not valid Unicode", ["body"]) from None
