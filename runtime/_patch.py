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
from itertools import islice
from typing import Any

from ._jsonvalue import dumps_proven

Patch = dict[str, Any]

# Past this many unshared items, one comparison of JSON texts is faster than one by one.
_CONFIRM_ONE_BY_ONE = 8


def same(old: Any, new: Any) -> bool:
    """Equal as JSON: ``True`` is not ``1``, ``1`` is not ``1.0`` and ``-0.0`` is not ``0.0``."""
    if old is new:
        return True
    kind = type(old)
    if kind is not type(new):
        return False
    if kind is float:
        return bool(old == new) and math.copysign(1, old) == math.copysign(1, new)
    if kind is not dict and kind is not list:
        return bool(old == new)
    # Python's == is fast but says True == 1: confirm the items the two do not share.
    if old != new:
        return False
    # Equal dicts have the same keys, though not always in the same order.
    pairs = ((v, new[k]) for k, v in old.items()) if kind is dict else zip(old, new, strict=True)
    unshared = list(islice(((a, b) for a, b in pairs if a is not b), _CONFIRM_ONE_BY_ONE + 1))
    if len(unshared) > _CONFIRM_ONE_BY_ONE:
        return dumps_proven(old) == dumps_proven(new)
    return all(same(a, b) for a, b in unshared)


# Patches already worked out during one encoding, by the ids of the values compared: a
# step's output is diffed against its task's input twice, as history and as next input.
Memo = dict[tuple[int, int], Patch | None]


def diff(old: Any, new: Any, memo: Memo | None = None) -> Patch | None:
    """The patch that turns ``old`` into ``new``; None when they are the same. ``memo``:
    patches found earlier between values that are still alive, to reuse."""
    kind = type(old)
    if memo is not None and (kind is dict or kind is list) and type(new) is kind:
        key = (id(old), id(new))
        if key not in memo:
            memo[key] = _diff(old, new, memo)
        return memo[key]
    return _diff(old, new, memo)


def _diff(old: Any, new: Any, memo: Memo | None) -> Patch | None:
    if same(old, new):
        return None
    if type(old) is dict and type(new) is dict:
        return _diff_dicts(old, new, memo)
    if type(old) is list and type(new) is list:
        return _diff_lists(old, new, memo)
    return {"v": new}


def _diff_dicts(old: dict[str, Any], new: dict[str, Any], memo: Memo | None) -> Patch:
    changed: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            changed[key] = {"v": value}
            continue
        item_patch = diff(old[key], value, memo)
        if item_patch is not None:
            changed[key] = item_patch
    removed = [key for key in old if key not in new]
    if len(changed) + len(removed) >= len(new) + 1 and len(new) <= 2:
        return {"v": new}  # small and mostly new: the value is the shorter patch
    patch: Patch = {"d": changed}
    if removed:
        patch["x"] = removed
    return patch


def _diff_lists(old: list[Any], new: list[Any], memo: Memo | None) -> Patch:
    size = len(old)
    if len(new) > size and same(old, new[:size]):
        return {"a": new[size:]}
    if len(new) == size and size:
        changed = {}
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            patch = diff(a, b, memo)
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
