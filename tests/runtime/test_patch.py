"""Structural patches: whatever two JSON values, the patch of one against the other
rebuilds the second exactly, and leaves the first as it was."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import example, given

from runtime._patch import apply, diff, same

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(
    allow_nan=False, allow_infinity=False, width=16) | st.text(max_size=3)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner,
                                                               max_size=4),
    max_leaves=12)


def text(value: Any) -> str:
    """Equal as JSON, type for type (True is not 1, -0.0 is not 0.0)."""
    return json.dumps(value, sort_keys=True)


# A key removed whose value was null: random values find a slip there only now and then.
REMOVED_NULLS = [({"a": None, "b": 0, "c": 0}, {"b": 0, "c": 0}),
                 ({"k": {"a": None, "b": [1]}}, {"k": {"b": [1]}}),
                 ([{"a": None, "b": 1}], [{"b": 1}]),
                 ({"a": None, "b": None}, {"b": None})]


@given(values, values)
@example(*REMOVED_NULLS[0])
@example(*REMOVED_NULLS[1])
@example(*REMOVED_NULLS[2])
@example(*REMOVED_NULLS[3])
def test_a_patch_rebuilds_the_new_value_and_keeps_the_old(old: Any, new: Any) -> None:
    before = text(old)
    assert text(apply(old, diff(old, new))) == text(new)
    assert text(old) == before


@given(st.lists(values, max_size=5), st.lists(values, min_size=1, max_size=3))
def test_an_appended_list_stores_only_what_was_appended(head: list[Any],
                                                        tail: list[Any]) -> None:
    patch = diff({"messages": head}, {"messages": head + tail})
    assert patch == {"d": {"messages": {"a": tail}}}


@pytest.mark.parametrize(("old", "new"), REMOVED_NULLS)
def test_a_removed_key_whose_value_was_null_is_gone(old: Any, new: Any) -> None:
    assert text(apply(old, diff(old, new))) == text(new)


def test_values_python_calls_equal_are_told_apart() -> None:
    for old, new in ((1, True), (0, 0.0), (0.0, -0.0), ([1], [True]), ({"a": 0}, {"a": False}),
                     ({"a": 0.0}, {"a": -0.0}), ({"a": -0.0}, {"a": 0.0})):
        assert text(apply(old, diff(old, new))) == text(new)


def test_a_list_that_grew_keeps_the_types_of_its_first_items() -> None:
    """Growth is an append only when the old list is the new one's prefix as JSON:
    ``[1]`` is no prefix of ``[True, 2]``, nor ``[0.0]`` of ``[-0.0, 1]``."""
    for old, new in (([1], [True, 2]), ([0.0], [-0.0, 1]), ([{"a": 1}], [{"a": 1.0}, 2]),
                     ([1, 2], [1, 2, 3])):
        rebuilt = apply(old, diff(old, new))
        assert text(rebuilt) == text(new)
        assert text(apply({"k": old}, diff({"k": old}, {"k": new}))) == text({"k": new})
    assert diff([1], [True, 2]) == {"v": [True, 2]}
    assert diff([1, 2], [1, 2, 3]) == {"a": [3]}


@given(values, values)
def test_same_is_equality_of_json_texts(old: Any, new: Any) -> None:
    assert same(old, new) == (text(old) == text(new))


@given(st.lists(values, max_size=12), st.integers(0, 11), values)
def test_same_tells_apart_one_item_among_shared_ones(items: list[Any], index: int,
                                                       replacement: Any) -> None:
    """Equal lists that share most items: only the unshared ones decide, one by one
    (few) or as text (many); ``True`` among shared items is still not ``1``."""
    changed = list(items)
    if changed:
        changed[index % len(changed)] = replacement
    copied = json.loads(json.dumps(changed))  # shares nothing
    for new in (changed, copied):
        assert same(items, new) == (text(items) == text(new))
        assert same({"k": items}, {"k": new}) == (text(items) == text(new))


def test_equal_dicts_in_another_key_order_are_the_same() -> None:
    shared = [1, 2]
    old = {"a": 0, "b": shared, "c": [True]}
    assert same(old, {"c": [True], "b": shared, "a": 0})
    assert not same(old, {"c": [1], "b": shared, "a": 0})
