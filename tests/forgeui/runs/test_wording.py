"""Decisions in words: each summary and each answer reads as a person would say it."""

from __future__ import annotations

from typing import Any

import pytest

from forgeui.runs.wording import answer_words, decision_line, plain, record_summary, summarize

EMAIL = {"to": "dana@example.com", "subject": "About your order", "body": "Hello"}


@pytest.mark.parametrize(("payload", "node", "kind", "marked", "run_input", "expected"), [
    pytest.param({"question": "Approve this transfer?", "amount": "500 EUR", "payee": "ACME",
                  "iban": "DE89370400440532013000"}, "ask", "node", ["amount", "payee"], None,
                 "Approve this transfer? · amount 500 EUR · payee ACME", id="marked-fields"),
    pytest.param({"question": "Pay?", "payee": "ACME", "amount": 5}, "ask", "node",
                 ["amount", "payee", "missing"], None, "Pay? · amount 5 · payee ACME",
                 id="marked-order-and-missing-keys"),
    pytest.param({"title": "Send it?", "args": EMAIL, "actions": ["accept"]}, "review",
                 "node", ["to"], None, "Send it? · to dana@example.com",
                 id="marked-field-of-the-proposal"),
    pytest.param({"question": "Approve this transfer?"}, "ask", "node", None,
                 {"amount": 250, "currency": "EUR", "to": "ACME Ltd", "memo": "x"},
                 "Approve this transfer? · amount 250 · currency EUR · to ACME Ltd",
                 id="question-with-the-run-input"),
    pytest.param({"question": "Legal sign-off?", "expense": {"item": "travel"}, "limit": 3,
                  "actions": ["accept"], "answer_schema": {"type": "object"}}, "legal", "node",
                 None, {"ignored": 1}, "Legal sign-off? · limit 3",
                 id="question-with-scalar-payload-fields"),
    pytest.param({"description": "\n  The agent   drafted\nan e-mail."}, "review", "node",
                 None, None, "The agent drafted", id="description-first-line"),
    pytest.param({"kind": "before", "node": "deploy", "input": {"version": "2.4.0",
                  "artifact": "app-2.4.0.tar.gz", "checks": [1, 2]}}, "deploy", "before",
                 None, None, "Paused before deploy · version 2.4.0 · artifact app-2.4.0.tar.gz",
                 id="breakpoint-before"),
    pytest.param({"kind": "after", "node": "ask", "output": {"approved": True}}, "ask",
                 "after", ["approved"], None, "Paused after ask · approved yes",
                 id="breakpoint-after-marked"),
    pytest.param({"action": "send_email", "args": EMAIL, "actions": ["accept", "edit"]},
                 "review", "node", None, None,
                 "review: send_email · to dana@example.com · subject About your order · body Hello",
                 id="headless-proposal"),
    pytest.param({"actions": ["accept", "ignore"], "ticket": 4411, "urgent": True}, "triage",
                 "node", None, None, "triage: accept / ignore · ticket 4411 · urgent yes",
                 id="headless-action-names"),
    pytest.param({"ticket": 4411, "nested": {"a": 1}, "empty": "", "owner": "kim",
                  "queue": "billing", "extra": "not shown"}, "triage", "node", None, None,
                 "triage · ticket 4411 · owner kim · queue billing", id="node-and-scalars"),
    pytest.param("Ship it?\nsecond line", "ask", "node", None, {"v": 2}, "Ship it? · v 2",
                 id="string-payload"),
    pytest.param(42, "count", "node", None, None, "count · 42", id="number-payload"),
    pytest.param(None, "wait", "node", None, None, "wait", id="null-payload"),
    pytest.param({"question": "Pay " + "x" * 300}, "ask", "node", None, None,
                 "Pay " + "x" * 155 + "…", id="shortened"),
])
def test_summaries(payload: Any, node: str, kind: str, marked: list[str] | None,
                   run_input: Any, expected: str) -> None:
    assert summarize(payload, node, kind, marked, run_input) == expected


def test_a_breakpoint_summary_never_shows_its_internal_payload() -> None:
    record = {"payload": {"kind": "before", "node": "deploy", "input": {"version": "9"}},
              "node": "deploy", "kind": "before"}
    text = record_summary(record)
    assert text == "Paused before deploy · version 9" and "kind" not in text


PROPOSAL = {"action": "send_email", "args": EMAIL, "actions": ["accept", "edit"]}


@pytest.mark.parametrize(("value", "payload", "kind", "note", "expected"), [
    pytest.param(True, None, "node", "", "Approved", id="true"),
    pytest.param(False, None, "node", "", "Rejected", id="false"),
    pytest.param(False, None, "node", "2.4.0 has not passed QA", "Rejected: 2.4.0 has not "
                 "passed QA", id="false-with-reason"),
    pytest.param(True, None, "node", "looks fine", "Approved", id="approve-note-not-a-reason"),
    pytest.param({"type": "accept", "args": None}, PROPOSAL, "node", "", "Approved",
                 id="accept"),
    pytest.param({"type": "ignore", "args": None}, PROPOSAL, "node", "", "Ignored",
                 id="ignore"),
    pytest.param({"type": "response", "args": "use the ledger"}, None, "node", "",
                 "Responded: use the ledger", id="response-agent-inbox-spelling"),
    pytest.param({"type": "escalate", "args": "kim"}, None, "node", "",
                 "type escalate, args kim", id="unknown-type-is-plain"),
    pytest.param({"type": "respond", "args": "Use the ledger"}, PROPOSAL, "node", "",
                 "Responded: Use the ledger", id="respond"),
    pytest.param({"type": "edit", "args": {**EMAIL, "to": "lead@example.com.invalid.test"}},
                 PROPOSAL, "node", "", "Edited: to → lead@example.com.in…", id="edit-one-field"),
    pytest.param({"type": "edit", "args": {"to": "a@b.c", "subject": "Hi"}}, PROPOSAL,
                 "node", "", "Edited: to → a@b.c, subject → Hi, body removed",
                 id="edit-changed-and-removed"),
    pytest.param({"type": "edit", "args": EMAIL}, PROPOSAL, "node", "",
                 "Edited, nothing changed", id="edit-unchanged"),
    pytest.param({"type": "edit", "args": [1, 2]}, None, "node", "", "Edited: 1, 2",
                 id="edit-without-proposal"),
    pytest.param({"type": "reject", "args": "too much"}, None, "node", "",
                 "Rejected: too much", id="reject-type-with-reason"),
    pytest.param({"approved": False, "reason": "over budget", "limit": 100}, None, "node", "",
                 "Rejected: over budget · limit 100", id="schema-verdict"),
    pytest.param({"approved": True}, None, "node", "", "Approved", id="schema-approved"),
    pytest.param({"limit": 5, "tags": ["a", "b"]}, None, "node", "",
                 '{"limit": 5, "tags": ["a", "b"]}', id="nested-object"),
    pytest.param("looks good", None, "node", "", "“looks good”", id="text"),
    pytest.param(7, None, "node", "", "7", id="number"),
    pytest.param(None, None, "node", "", "Answered with no value", id="null"),
    pytest.param(True, None, "before", "", "Continued", id="breakpoint-continue"),
    pytest.param(False, None, "before", "not QA'd",
                 "Continued (answer recorded: Rejected: not QA'd)",
                 id="breakpoint-reject-is-only-recorded"),
    pytest.param({"type": "continue"}, None, "after", "", "Continued",
                 id="breakpoint-continue-type"),
])
def test_answers_in_words(value: Any, payload: Any, kind: str, note: str,
                          expected: str) -> None:
    assert answer_words(value, payload, kind, note) == expected


def test_no_answer_reads_as_bare_json() -> None:
    shapes: list[Any] = [True, False, {"type": "accept", "args": None}, {"approved": True}]
    for value in shapes:
        words = answer_words(value)
        assert words not in ("true", "false") and "{" not in words


@pytest.mark.parametrize(("value", "expected"), [
    ({"a": 1, "b": None}, "a 1, b —"), ([True, "x"], "yes, x"), ("a\nb", "a"),
    ("y" * 200, "y" * 79 + "…"),
])
def test_plain_values(value: Any, expected: str) -> None:
    assert plain(value) == expected


def test_a_decision_line_joins_question_and_answer() -> None:
    assert decision_line("Approve this transfer? · amount 500", "Approved") == (
        "Approve this transfer? · amount 500 → Approved")
