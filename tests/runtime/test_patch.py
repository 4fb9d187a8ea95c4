"""Structural patches: whatever two JSON values, the patch of one against the other
rebuilds the second exactly, and leaves the first as it was."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
from hypothesis import given

from runtime._patch import apply, diff

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


@given(values, values)
def test_a_patch_rebuilds_the_new_value_and_keeps_the_old(old: Any, new: Any) -> None:
    before = text(old)
    assert text(apply(old, diff(old, new))) == text(new)
    assert text(old) == before


@given(st.lists(values, max_size=5), st.lists(values, min_size=1, max_size=3))
def test_an_appended_list_stores_only_what_was_appended(head: list[Any],
                                                        tail: list[Any]) -> None:
    patch = diff({"messages": head}, {"messages": head + tail})
    assert patch == {"d": {"messages": {"a": tail}}}


def test_values_python_calls_equal_are_told_apart() -> None:
    for old, new in ((1, True), (0, 0.0), (0.0, -0.0), ([1], [True]), ({"a": 0}, {"a": False})):
        assert text(apply(old, diff(old, new))) == text(new)
