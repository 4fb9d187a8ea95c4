"""Ids: random ones are version-4 UUIDs, derived ones the same version-5 UUIDs as ever."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from runtime._ids import _FORGE, derived_id, interrupt_id, new_id, task_id


@given(st.lists(st.one_of(st.text(st.characters(blacklist_categories=["Cs"])), st.integers()),
                min_size=1, max_size=5))
def test_a_derived_id_is_uuid5_of_its_parts(parts: list[object]) -> None:
    assert derived_id(*parts) == uuid.uuid5(_FORGE, "\x1f".join(map(str, parts))).hex


def test_derived_ids_saved_by_earlier_versions_still_match() -> None:
    # Worked out once with uuid.uuid5: checkpoints saved back then hold this id.
    assert task_id("run-1", 3, "approve") == "a0f6dfc9578c54c7a67a1ba71517a988"
    assert interrupt_id("run-1", "t", "value", 0) != interrupt_id("run-1", "t", "value", 1)


def test_a_new_id_is_a_random_version_4_uuid() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    # Every hex digit but the fixed ones varies: the bytes are random, not a counter.
    assert all(len({text[i] for text in ids}) > 8 for i in range(32) if i not in (12, 16))
