"""json_copy proves a value is JSON whichever encoder copies it: what is not JSON is
refused, never quietly changed into something that is."""

from __future__ import annotations

import enum
import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from runtime._jsonvalue import NotJSON, json_clone, json_copy, json_copy_sharing, json_text


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int


class Tagged(dict):  # type: ignore[type-arg]
    pass


@pytest.mark.parametrize("value", [
    {"id": uuid.uuid4()}, {"colour": Colour.RED}, {"score": math.nan}, [math.inf],
    {"at": datetime(2026, 1, 1)}, {"point": Point(1)}, {"set": {1, 2}}, [object()],
])
def test_what_is_not_json_is_refused(value: Any) -> None:
    with pytest.raises(NotJSON):
        json_copy(value)


def test_json_is_copied_equal_and_apart() -> None:
    value = {"messages": [{"role": "user", "content": "é ✓"}], "n": 2**70, "f": -0.0,
             "flags": [True, 1, 1.0, None]}
    copied = json_copy(value)
    assert copied == value and copied is not value
    assert copied["messages"][0] is not value["messages"][0]
    assert [type(v) for v in copied["flags"]] == [bool, int, float, type(None)]
    assert math.copysign(1, copied["f"]) == -1
    assert json_clone(copied) == value


def test_the_standard_library_rules_still_hold_for_what_it_converts() -> None:
    assert json_copy({"pair": (1, 2)}) == {"pair": [1, 2]}
    assert json_copy({1: "one"}) == {"1": "one"}
    assert json_copy(Tagged(a=1)) == {"a": 1}


def test_a_copy_sharing_keeps_what_it_shares_and_copies_the_rest() -> None:
    first, second = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    proven = {"messages": [first, second], "turn": 2}
    added = {"role": "assistant", "content": "c"}
    value = {"messages": [first, second, added], "turn": 3, "new": [1]}
    copied = json_copy_sharing(value, proven)
    assert copied == value and copied is not value
    assert copied["messages"][0] is first and copied["messages"][1] is second
    assert copied["messages"][2] == added and copied["messages"][2] is not added
    assert copied["new"] is not value["new"]
    assert json_copy_sharing(proven, proven) is proven


@pytest.mark.parametrize("value", [
    {"messages": [{"role": "user"}, math.nan]}, {"messages": [{"at": datetime(2026, 1, 1)}]},
    {"messages": [{"role": "user"}], "id": uuid.uuid4()},
])
def test_a_copy_sharing_refuses_what_is_not_json_in_what_it_adds(value: Any) -> None:
    proven = {"messages": [{"role": "user"}]}
    with pytest.raises(NotJSON):
        json_copy_sharing(value, proven)


def test_a_copy_sharing_converts_as_json_copy_does() -> None:
    proven: dict[str, Any] = {"pairs": [[1, 2]]}
    value = {"pairs": [proven["pairs"][0], (3, 4)], 1: "one"}
    assert json_copy_sharing(value, proven) == json_copy(value) == {
        "pairs": [[1, 2], [3, 4]], "1": "one"}
    assert json_copy_sharing(Tagged(a=1), {"a": 1}) == {"a": 1}


def test_the_text_of_a_value_tells_a_change() -> None:
    value = {"messages": [{"content": "a"}], "n": 2**70}
    before = json_text(value)
    assert json_text(value) == before
    value["messages"][0]["content"] = "b"
    assert json_text(value) != before
    with pytest.raises(NotJSON):
        json_text({"at": datetime(2026, 1, 1)})
