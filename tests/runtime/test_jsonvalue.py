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

from runtime._jsonvalue import NotJSON, json_clone, json_copy


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
