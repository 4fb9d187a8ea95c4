"""Bulk answers in words: why a row was left alone (no ids, no schema terms), and the
audit line of a bulk answer."""

from __future__ import annotations

import pytest

from forgeui.runs.bulk import BulkOutcome
from forgeui.web.audit_lines import bulk_line
from forgeui.web.bulk_report import why_not


@pytest.mark.parametrize(("outcome", "expected"), [
    (BulkOutcome("i1", "stale", "already answered by ann", answered_by="ann"),
     "already answered by ann"),
    (BulkOutcome("i1", "stale", "claimed meanwhile by bob"), "claimed meanwhile by bob"),
    (BulkOutcome("i1", "stale", "the run moved on: checkpoint 'ab12' is not the latest "
                                "('cd34')"), "the run moved on"),
    (BulkOutcome("i1", "forbidden", "you may not answer this interrupt: assigned to bob"),
     "assigned to bob"),
    (BulkOutcome("i1", "not_found", "no interrupt 'i1'"), "it no longer exists"),
    (BulkOutcome("i1", "invalid", "answer does not match the interrupt's schema at $: "
                                  "'approved' is a required property"),
     "it asks for a specific answer, not Approve or Reject; open it to answer"),
    (BulkOutcome("i1", "unavailable", "graph 'x' cannot be loaded: boom"),
     "its graph cannot be loaded on this server right now"),
])
def test_why_a_row_was_not_answered(outcome: BulkOutcome, expected: str) -> None:
    assert why_not(outcome) == expected


@pytest.mark.parametrize(("detail", "expected"), [
    ({"value": True, "outcomes": {"a": "accepted", "b": "stale"}},
     "Approved in bulk: 1 of 2 interrupts answered"),
    ({"value": False, "outcomes": {"a": "accepted"}},
     "Rejected in bulk: 1 of 1 interrupt answered"),
    ({"value": True, "outcomes": "garbled"}, "Approved in bulk: 0 of 0 interrupts answered"),
])
def test_a_bulk_audit_entry_in_words(detail: dict[str, object], expected: str) -> None:
    assert bulk_line(detail) == expected
