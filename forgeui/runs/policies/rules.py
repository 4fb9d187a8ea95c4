"""The declarative rules of ``auto_approve``: data compared with data, nothing evaluated.

A rule is a JSON object, one of::

    {"field": "amount", "lt": 1000}            one comparison on one field
    {"all": [rule, ...]}  {"any": [rule, ...]}  {"not": rule}

``field`` is a dotted path into the proposed args (``"payee.country"``; a digit indexes a
list). Operators: ``eq``, ``ne``, ``lt``, ``lte``, ``gt``, ``gte`` (numbers with numbers,
text with text), ``in`` and ``not_in`` (a list of values), ``exists`` (true or false).
A comparison that cannot read its field (missing, or of another kind than the rule's
values) is unknown, and so is ``not`` of it: an unknown approves nothing, so a negative
rule never approves what it could not read. ``all`` is unknown when no part is false and
one is unknown; ``any`` when no part is true and one is unknown.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Any

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "lte": operator.le,
    "gt": operator.gt, "gte": operator.ge,
}
MEMBERSHIP = ("in", "not_in")
OPERATORS = (*COMPARISONS, *MEMBERSHIP, "exists")
MAX_DEPTH = 8
_MISSING: Any = object()


class RuleError(ValueError):
    """A rule that is not in the language; the message says where and why."""


def check(rule: Any, where: str = "auto_approve", depth: int = 0) -> None:
    """Raise ``RuleError`` unless ``rule`` is a well-formed rule."""
    if depth > MAX_DEPTH:
        raise RuleError(f"{where}: rules nest at most {MAX_DEPTH} deep")
    if not isinstance(rule, dict) or not rule:
        raise RuleError(f"{where}: a rule is a JSON object, not {rule!r}")
    if "all" in rule or "any" in rule:
        _check_group(rule, where, depth)
    elif "not" in rule:
        if set(rule) != {"not"}:
            raise RuleError(f"{where}: 'not' takes one rule and nothing beside it")
        check(rule["not"], f"{where}.not", depth + 1)
    else:
        _check_comparison(rule, where)


def _check_group(rule: dict[str, Any], where: str, depth: int) -> None:
    kinds = set(rule) & {"all", "any"}
    if len(rule) != 1 or len(kinds) != 1:
        raise RuleError(f"{where}: 'all' or 'any' takes a list of rules and nothing beside it")
    kind = kinds.pop()
    parts = rule[kind]
    if not isinstance(parts, list) or not parts:
        raise RuleError(f"{where}.{kind}: a non-empty list of rules")
    for index, part in enumerate(parts):
        check(part, f"{where}.{kind}[{index}]", depth + 1)


def _check_comparison(rule: dict[str, Any], where: str) -> None:
    field = rule.get("field")
    if not isinstance(field, str) or not field.strip():
        raise RuleError(f"{where}: a comparison names a 'field' (a dotted path)")
    ops = [key for key in rule if key != "field"]
    if len(ops) != 1 or ops[0] not in OPERATORS:
        raise RuleError(f"{where}: one operator beside 'field', one of {', '.join(OPERATORS)}"
                        f" (got {', '.join(ops) or 'none'})")
    op, operand = ops[0], rule[ops[0]]
    if op in MEMBERSHIP and not isinstance(operand, list):
        raise RuleError(f"{where}.{op}: a list of values")
    if op == "exists" and not isinstance(operand, bool):
        raise RuleError(f"{where}.exists: true or false")
    if op in ("lt", "lte", "gt", "gte") and _kind(operand) not in ("number", "text"):
        raise RuleError(f"{where}.{op}: compares with a number or a text, not {operand!r}")


def matches(rule: dict[str, Any], subject: Any) -> bool:
    """Whether ``subject`` (the proposed args) surely meets ``rule``, already checked."""
    return evaluate(rule, subject) is True


def evaluate(rule: dict[str, Any], subject: Any) -> bool | None:
    """True, false, or None where the rule's answer rests on a field it cannot read."""
    if "all" in rule:
        return _all(evaluate(part, subject) for part in rule["all"])
    if "any" in rule:
        found = _all(_negated(evaluate(part, subject)) for part in rule["any"])
        return _negated(found)
    if "not" in rule:
        return _negated(evaluate(rule["not"], subject))
    return _compare(rule, lookup(subject, rule["field"]))


def _all(results: Iterable[bool | None]) -> bool | None:
    found: bool | None = True
    for result in results:
        if result is False:
            return False
        if result is None:
            found = None
    return found


def _negated(result: bool | None) -> bool | None:
    return None if result is None else not result


def _compare(rule: dict[str, Any], value: Any) -> bool | None:
    (op,) = (key for key in rule if key != "field")
    operand = rule[op]
    if op == "exists":
        return (value is not _MISSING) is operand
    if op in MEMBERSHIP:
        if value is _MISSING or not any(_kind(value) == _kind(item) for item in operand):
            return None
        found = any(_same(value, item) for item in operand)
        return found if op == "in" else not found
    if value is _MISSING or _kind(value) != _kind(operand):
        return None
    return bool(COMPARISONS[op](value, operand))


def lookup(subject: Any, path: str) -> Any:
    """The value at a dotted ``path`` of ``subject``, or a marker when there is none."""
    found = subject
    for part in path.split("."):
        if isinstance(found, dict) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return _MISSING
    return found


def _kind(value: Any) -> str:
    """Booleans are not numbers here: ``true < 1000`` must not approve a transfer."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "text" if isinstance(value, str) else type(value).__name__


def _same(left: Any, right: Any) -> bool:
    return _kind(left) == _kind(right) and left == right
