"""Every value the runtime persists must survive JSON; this is where that is checked."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from typing import Any

try:  # several times faster than the standard library at writing JSON
    import orjson
except ImportError:  # pragma: no cover - forge installs it; the runtime runs without it
    orjson = None  # type: ignore[assignment]


# Dataclasses, datetimes and subclasses of JSON types are not JSON: let orjson refuse them.
_STRICT = 0 if orjson is None else (orjson.OPT_PASSTHROUGH_DATACLASS
                                    | orjson.OPT_PASSTHROUGH_DATETIME
                                    | orjson.OPT_PASSTHROUGH_SUBCLASS)


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
    if orjson is not None:
        # orjson is several times faster, but writes NaN as null and some non-JSON types
        # (UUID, Enum) as strings: a copy equal to the value proves nothing was changed.
        try:
            copied = orjson.loads(orjson.dumps(value, option=_STRICT))
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            if type(copied) is type(value) and copied == value:
                return copied
    return json.loads(dumps(value))


_NOTHING = object()

# A value whose JSON is no longer than this is cheaper to copy, or to write again, than to
# keep apart from what holds it.
SMALL_TEXT = 4096


def json_copy_sharing(value: Any, proven: Any) -> Any:
    """``json_copy(value)``, keeping uncopied what ``value`` shares with ``proven`` (the
    same object in the same place): ``proven`` is already JSON and nothing changes it. A
    node's output mostly shares its input, so only what the node added is proven."""
    if value is proven:
        return value
    if type(value) is dict and type(proven) is dict and all(type(k) is str for k in value):
        return {key: json_copy_sharing(item, proven.get(key, _NOTHING))
                for key, item in value.items()}
    if type(value) is list and type(proven) is list:
        same = list(map(operator.is_, value, proven))  # a C loop: lists run long
        kept = same.index(False) if False in same else len(same)
        rest = [json_copy_sharing(item, proven[at] if at < len(proven) else _NOTHING)
                for at, item in enumerate(value[kept:], start=kept)]
        return value[:kept] + rest if rest else value[:kept]
    return json_copy(value)


def json_text(value: Any) -> bytes:
    """The JSON text of a value, to tell later whether it changed; raises ``NotJSON``."""
    if orjson is not None:
        try:
            return orjson.dumps(value, option=_STRICT)
        except TypeError:  # orjson.JSONEncodeError: e.g. integers past 64 bits
            pass
    return dumps(value).encode()


def json_clone(value: Any) -> Any:
    """A deep copy of a value already proven JSON (one a checkpoint holds)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if orjson is not None:
        try:
            return orjson.loads(orjson.dumps(value))
        except TypeError:  # orjson.JSONEncodeError: e.g. integers past 64 bits
            pass
    return json_copy(value)


def loads(text: str | bytes) -> Any:
    """A value from JSON text the runtime wrote (orjson reads it when it can)."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:  # e.g. integers past 64 bits: the stdlib reads them
            pass
    return json.loads(text)


def dumps_proven(value: Any) -> str:
    """Compact JSON text of a value already proven JSON (``json_copy``), as a checkpoint is.

    orjson writes it when it can. What orjson would not write exactly (integers past 64
    bits, lone surrogates, keys that are not strings) makes it raise, and then the
    standard library writes it. The texts differ only in escaping (orjson writes UTF-8
    where the standard library writes ``\\u`` escapes) and in float spelling; both read
    back to the same value. NaN and infinities never get here: ``json_copy`` refuses them.
    """
    if orjson is not None:
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # orjson.JSONEncodeError
            pass
    return json.dumps(value, separators=(",", ":"))


def at_most(budget: int, *values: Any) -> int:
    """``budget`` less the JSON length of ``values`` (roughly), or -1 once past it: the
    walk stops there, so telling a large value costs no more than a small one."""
    return _left(budget, values)


def _left(budget: int, values: Iterable[Any]) -> int:
    for value in values:
        if isinstance(value, dict):
            budget = _left(budget - 2 - 4 * len(value), value)  # its keys
            budget = _left(budget, value.values())
        elif isinstance(value, list):
            budget = _left(budget - 2 - len(value), value)
        elif isinstance(value, str):
            budget -= len(value) + 2
        else:
            budget -= 8
        if budget < 0:
            return -1
    return budget
