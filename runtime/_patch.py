"""Structural diffs of JSON values, so a checkpoint stores what its step changed.

A patch is a dict of one of these shapes:

- ``{"v": value}``: the whole new value;
- ``{"d": {key: patch}, "x": [removed keys]}``: a dict with some keys changed;
- ``{"a": [items]}``: a list with items appended (the old list is a prefix of the new);
- ``{"l": {index: patch}}``: a list of the same length with some items changed.

``apply`` never mutates its input: it copies the containers along each changed path and
shares the rest, so successive values rebuilt from one chain share what they did not change.
"""

from __future__ import annotations

import math
from typing import Any

from ._jsonvalue import dumps_proven

Patch = dict[str, Any]

# Past this many unshared containers, one comparison of JSON texts is faster than one by one.
_CONFIRM_ONE_BY_ONE = 8


def same(old: Any, new: Any) -> bool:
    """Equal as JSON: ``True`` is not ``1``, ``1`` is not ``1.0`` and ``-0.0`` is not ``0.0``."""
    if old is new:
        return True
    kind = type(old)
    if kind is not type(new):
        return False
    if kind is dict or kind is list:
        return bool(old == new) and _equal_as_json(old, new)
    if kind is float:
        return bool(old == new) and math.copysign(1, old) == math.copysign(1, new)
    return bool(old == new)


def _equal_as_json(old: dict[str, Any] | list[Any], new: dict[str, Any] | list[Any]) -> bool:
    """Are two containers that Python calls equal also equal as JSON? Python's == says
    ``True == 1``; items the two share, and equal strings and integers, are the same."""
    if type(old) is dict:
        assert type(new) is dict
        pairs = zip(old.values(), map(new.__getitem__, old), strict=True)
    else:
        pairs = zip(old, new, strict=True)
    budget = _CONFIRM_ONE_BY_ONE
    for a, b in pairs:
        if a is b:
            continue
        kind = type(a)
        if kind is not type(b):
            return False
        if kind is dict or kind is list:
            budget -= 1
            if budget < 0:
                return dumps_proven(old) == dumps_proven(new)
            if not _equal_as_json(a, b):
                return False
        elif kind is float and math.copysign(1, a) != math.copysign(1, b):
            return False
    return True


def diff(old: Any, new: Any) -> Patch | None:
    """The patch that turns ``old`` into ``new``; None when they are the same."""
    if same(old, new):
        return None
    if type(old) is dict and type(new) is dict:
        return _diff_dicts(old, new)
    if type(old) is list and type(new) is list:
        return _diff_lists(old, new)
    return {"v": new}


# Scalars whose ``==`` is already equality as JSON (not floats: ``-0.0 == 0.0``), and empty
# containers, compared in the loop below without a call: most of a head's fields,
# unchanged from one step to the next.
_PLAIN = (str, int, bool, type(None))
_CONTAINERS = (dict, list)
_MISSING = object()


def _diff_dicts(old: dict[str, Any], new: dict[str, Any]) -> Patch:
    changed: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key, _MISSING)
        if before is value:
            continue
        if before is _MISSING:
            changed[key] = {"v": value}
            continue
        kind = type(value)
        if kind is not type(before):
            changed[key] = {"v": value}
            continue
        if kind in _PLAIN or (kind in _CONTAINERS and not (value or before)):
            if before != value:
                changed[key] = {"v": value}
            continue
        item_patch = diff(before, value)
        if item_patch is not None:
            changed[key] = item_patch
    removed = [key for key in old if key not in new]
    if len(changed) + len(removed) >= len(new) + 1 and len(new) <= 2:
        return {"v": new}  # small and mostly new: the value is the shorter patch
    patch: Patch = {"d": changed}
    if removed:
        patch["x"] = removed
    return patch


def _diff_lists(old: list[Any], new: list[Any]) -> Patch:
    size = len(old)
    if len(new) > size and same(old, new[:size]):
        return {"a": new[size:]}
    if len(new) == size and size:
        changed = {}
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            patch = diff(a, b)
            if patch is not None:
                changed[str(index)] = patch
        return {"l": changed}
    return {"v": new}


def apply(old: Any, patch: Patch | None) -> Any:
    """``old`` changed by ``patch`` (a new value; ``old`` is left as it was)."""
    if patch is None:
        return old
    if "v" in patch:
        return patch["v"]
    if "a" in patch:
        return [*old, *patch["a"]]
    if "l" in patch:
        items = list(old)
        for index, item_patch in patch["l"].items():
            items[int(index)] = apply(items[int(index)], item_patch)
        return items
    value = dict(old)
    for key in patch.get("x", ()):
        del value[key]
    for key, item_patch in patch["d"].items():
        value[key] = apply(value.get(key), item_patch)
    return value
