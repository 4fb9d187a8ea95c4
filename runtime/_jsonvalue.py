"""Every value the runtime persists must survive JSON; this is where that is checked."""

from __future__ import annotations

import json
from typing import Any


class NotJSON(ValueError):
    """A value that JSON cannot hold; the message names its type."""


def dumps(value: Any) -> str:
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise NotJSON(f"{type(value).__name__} value is not JSON-serialisable ({exc})") from None


def json_copy(value: Any) -> Any:
    """A deep copy that also proves the value is JSON; raises ``NotJSON`` otherwise."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    return json.loads(dumps(value))
