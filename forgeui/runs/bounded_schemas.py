"""JSON Schemas from outside (an agent's ``args_schema``, a graph's ``answer_schema``),
checked and applied in time bounded by the size of the schema and the value.

Python's ``re`` backtracks: ``^(a+)+$`` against a short run of ``a`` and a ``!`` holds
the interpreter in exponential time. Here ``pattern`` and ``patternProperties`` run on RE2, which is
linear in the text, and ``problem`` refuses up front what RE2 cannot run (backreferences,
lookaround), what would still reach ``re`` inside jsonschema (``unevaluatedProperties``
beside ``patternProperties``, a ``$schema`` below the root, which switches to the stock
validator), and references that leave the schema or lead back into themselves. Remote
references are never fetched. ``format`` is asserted (``email``, ``uri``, ``date-time``...).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any
from urllib.parse import unquote

import jsonschema
import re2  # type: ignore[import-untyped]
import referencing
from jsonschema.exceptions import ValidationError

MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
        "dependencies")
LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
SINGLE = ("items", "additionalItems", "additionalProperties", "unevaluatedItems",
          "unevaluatedProperties", "contains", "propertyNames", "not", "if", "then", "else",
          "contentSchema")
UNSUPPORTED = ("$dynamicRef", "$recursiveRef")
# Compiled patterns are cached per process: each is kept small, in text and in memory.
MAX_PATTERN_CHARS = 1000
_OPTIONS = re2.Options()
_OPTIONS.max_mem = 1 << 20
_OPTIONS.log_errors = False  # a refused pattern is reported to the caller, not to stderr


class Unbounded(ValueError):
    """A schema that cannot be applied in bounded time; the message says where and why."""


def problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` (already a valid JSON Schema) cannot be applied safely, or None."""
    return _problem(json.dumps(schema, sort_keys=True))


def validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for ``schema`` whose regexes run on RE2, that asserts
    formats and resolves only references inside the schema; ``Unbounded`` if ``problem``
    finds one (a row stored before schemas were checked this way)."""
    refused = problem(schema)
    if refused is not None:
        raise Unbounded(refused)
    base = jsonschema.validators.validator_for(schema)
    return _bounded(base)(schema, format_checker=base.FORMAT_CHECKER,
                          registry=referencing.Registry())


@lru_cache(maxsize=64)
def _problem(frozen: str) -> str | None:
    schema = json.loads(frozen)
    try:
        _Walk(schema).visit(schema, schema, "")
    except Unbounded as refused:
        return str(refused)
    except RecursionError:
        return "answer_schema is nested too deeply"
    return None


class _Walk:
    """One depth-first pass over the schema, following ``$ref`` to find loops."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.active: set[tuple[int, int]] = set()
        self.done: set[tuple[int, int]] = set()
        self.pattern_properties = self.unevaluated = False

    def visit(self, node: Any, base: Any, where: str) -> None:
        key = (id(node), id(base))
        if not isinstance(node, dict) or key in self.done:
            return
        if key in self.active:
            raise Unbounded(f"answer_schema leads back into itself at {_at(where)}: "
                            f"recursive references are not accepted")
        self.active.add(key)
        self.check_node(node, where)
        base = node if isinstance(node.get("$id"), str) else base
        for child, at in _children(node, where):
            self.visit(child, base, at)
        if isinstance(node.get("$ref"), str):
            target, target_base = self.resolve(node["$ref"], base, where)
            self.visit(target, target_base, f"{where}/$ref")
        self.active.discard(key)
        self.done.add(key)

    def check_node(self, node: dict[str, Any], where: str) -> None:
        at = _at(where)
        if "$schema" in node and node is not self.root:
            raise Unbounded(f"answer_schema declares $schema at {at}: only its root may")
        for keyword in UNSUPPORTED:
            if keyword in node:
                raise Unbounded(f"answer_schema uses {keyword} at {at}, which is not "
                                f"supported; use $ref to #/$defs/...")
        if isinstance(node.get("pattern"), str):
            _check_pattern(node["pattern"], f"{at}/pattern")
        if isinstance(node.get("patternProperties"), dict):
            self.pattern_properties = True
            for pattern in node["patternProperties"]:
                _check_pattern(pattern, f"{at}/patternProperties")
        self.unevaluated = self.unevaluated or "unevaluatedProperties" in node
        if self.pattern_properties and self.unevaluated:
            raise Unbounded("answer_schema combines unevaluatedProperties with "
                            "patternProperties, which is not supported")

    def resolve(self, ref: str, base: Any, where: str) -> tuple[Any, Any]:
        """The subschema a local ``#/...`` reference names, and its resource root."""
        if ref != "#" and not ref.startswith("#/"):
            raise Unbounded(f"answer_schema refers to {ref!r} at {_at(where)}: only "
                            f"references inside the schema (#/...) are followed")
        node = base
        for part in ref[2:].split("/") if ref != "#" else []:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            node = _step(node, part)
            if node is None:
                raise Unbounded(f"answer_schema refers to {ref!r} at {_at(where)}, "
                                f"which is not in the schema")
            base = node if isinstance(node, dict) and isinstance(node.get("$id"), str) \
                else base
        return node, base


def _at(where: str) -> str:
    return where.lstrip("/") or "(root)"


def _step(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


def _children(node: dict[str, Any], where: str) -> Iterator[tuple[Any, str]]:
    for keyword in MAPS:
        if isinstance(node.get(keyword), dict):
            for name, child in node[keyword].items():
                yield child, f"{where}/{keyword}/{name}"
    for keyword in LISTS:
        if isinstance(node.get(keyword), list):
            for index, child in enumerate(node[keyword]):
                yield child, f"{where}/{keyword}/{index}"
    for keyword in SINGLE:
        if isinstance(node.get(keyword), dict):
            yield node[keyword], f"{where}/{keyword}"


def _check_pattern(pattern: str, where: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise Unbounded(f"answer_schema's pattern at {where} is longer than "
                        f"{MAX_PATTERN_CHARS} characters")
    try:
        _regex(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise Unbounded(f"answer_schema's pattern {pattern!r} at {where} cannot be checked "
                        f"in linear time (RE2: {reason}); backreferences, lookaround and "
                        f"huge repetitions are not accepted") from None


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern, options=_OPTIONS)


def _search(pattern: str, text: str) -> bool:
    return _regex(pattern).search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if _search(pattern, name):
                yield from validator.descend(value, subschema, path=name,
                                             schema_path=pattern)


def _additional_properties(validator: Any, extra_schema: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = sorted(name for name in instance if name not in known
                    and not any(_search(pattern, name) for pattern in patterns))
    if validator.is_type(extra_schema, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra_schema, path=name)
    elif extra_schema is False and extras:
        listed = ", ".join(repr(name) for name in extras)
        yield ValidationError(f"Additional properties are not allowed ({listed} "
                              f"{'was' if len(extras) == 1 else 'were'} unexpected)")


@cache
def _bounded(base: Any) -> Any:
    return jsonschema.validators.extend(base, {
        "pattern": _pattern, "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties})
