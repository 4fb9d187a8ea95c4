"""The API's JSON body parser: strict where Python's ``json`` module is lenient.

Limits (documented in the OpenAPI description, enforced before any handler runs):

- ``MAX_BODY_BYTES`` (1 MiB): a larger body is 413.
- A query parameter that takes one value, given twice, is 422 (Django would keep the last).
- The body must be UTF-8 JSON; ``NaN``, ``Infinity``, floats that overflow, integers
  beyond ±(2**53 - 1) (I-JSON, RFC 7493: what every JSON client reads exactly), nesting
  deeper than ``MAX_DEPTH`` and strings holding NUL or lone surrogates (PostgreSQL's
  ``jsonb`` and UTF-8 cannot store them) are 422.

The errors raised here reach the handlers of ``forgeui.api.errors`` (ninja wraps them in
a 400 ``HttpError``; the handler unwraps the cause).
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja.errors import ValidationError
from ninja.parser import Parser

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1


class BodyRefused(ValueError):
    """A request body the API will not read; ``status`` is the HTTP answer."""

    status = 422


class BodyTooLarge(BodyRefused):
    status = 413


def _refuse_constant(name: str) -> Any:
    raise BodyRefused(f"{name} is not JSON; send a number or null")


def _parse_int(text: str) -> int:
    # Bound the digits first: int() of a 100k-digit string is slow, and Python refuses
    # more than 4300 digits with a ValueError of its own.
    if len(text.lstrip("-")) > 16 or abs(value := int(text)) > MAX_SAFE_INTEGER:
        raise BodyRefused(f"integer {text[:20]}{'...' if len(text) > 20 else ''} is beyond "
                          f"±{MAX_SAFE_INTEGER} (send it as a string)")
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BodyRefused(f"number {text[:20]} overflows a double")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object; a key given twice is refused (parsers disagree on which one wins)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise BodyRefused(f"key {key[:40]!r} appears more than once in one object")
        found[key] = value
    return found


def _check_text(text: str, where: str) -> None:
    if "\x00" in text:
        raise BodyRefused(f"{where}: NUL characters (\\u0000) are not accepted")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BodyRefused(f"{where}: lone surrogate escapes are not valid Unicode") from None


def check_value(value: Any) -> None:
    """Walk a parsed value without recursion: depth, strings and keys."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item, "string")
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise BodyRefused(f"JSON nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key in item:
                    _check_text(key, "object key")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def loads(body: bytes) -> Any:
    """Parse one request body, or raise ``BodyRefused`` saying why not."""
    if len(body) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"request body is {len(body)} bytes; the limit is {MAX_BODY_BYTES}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyRefused(f"request body is not valid UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_int=_parse_int,
                          parse_float=_parse_float, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise BodyRefused(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise BodyRefused(f"malformed JSON: {exc}") from None
    check_value(data)
    return data


class StrictJSONParser(Parser):
    """ninja's parser with the limits above; a single-valued parameter given twice is 422."""

    def parse_body(self, request: HttpRequest) -> Any:
        return loads(request.body)

    def parse_querydict(self, data: MultiValueDict, list_fields: list[str],
                        request: HttpRequest) -> dict[str, Any]:
        repeated = [key for key in data if key not in list_fields and len(data.getlist(key)) > 1]
        if repeated:
            raise ValidationError([{"loc": ["query", key], "msg": "given more than once",
                                    "type": "repeated"} for key in repeated])
        return super().parse_querydict(data, list_fields, request)
