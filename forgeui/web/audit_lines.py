"""What an audit entry was about, in words: the interrupt it touched, and what was decided.

"Approve this transfer? · amount 500 · payee ACME → Approved" instead of an id and a
JSON detail. The interrupts of a page (or of an export's chunk) are read in one query.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from forgeui.models import THREAD_DELETED, AuditEntry, Interrupt
from forgeui.runs.wording import (
    answer_words,
    decision_line,
    interrupt_summary,
    line,
    scalar_fields,
)

DECIDING = ("answer", "answer.refused")


def described(entries: Iterable[AuditEntry]) -> Iterator[tuple[AuditEntry, str]]:
    """Each entry with its line ("" when there is nothing to say in words)."""
    listed = list(entries)
    ids = {e.object_id for e in listed if e.object_type == "interrupt" and e.object_id}
    interrupts = Interrupt.objects.select_related("run").in_bulk(ids) if ids else {}
    for entry in listed:
        yield entry, describe(entry, interrupts.get(entry.object_id))


def described_in_chunks(entries: Iterable[AuditEntry],
                        size: int = 500) -> Iterator[tuple[AuditEntry, str]]:
    """``described`` for an export: one lookup per ``size`` entries, never all at once."""
    found = iter(entries)
    while chunk := list(islice(found, size)):
        yield from described(chunk)


def describe(entry: AuditEntry, interrupt: Interrupt | None) -> str:
    detail = entry.detail if isinstance(entry.detail, dict) else {}
    if entry.action == "answer.bulk":
        return bulk_line(detail)
    if entry.action == "run.start":
        return line(f"Started {detail.get('graph') or 'a run'}", scalar_fields(detail.get("input")))
    if entry.action == THREAD_DELETED:
        return "Deleted the thread, its checkpoints and its runs"
    if interrupt is None:
        return ""
    summary = interrupt_summary(interrupt)
    if entry.action == "answer.applied" and detail.get("status"):
        return f"{summary} (answer applied; the run is {detail['status']})"
    if entry.action not in DECIDING:
        return summary
    said = decision_line(summary, answer_words(detail.get("value"), interrupt.payload,
                                               interrupt.kind, str(detail.get("steering") or "")))
    if entry.action == "answer.refused":
        return f"{said} (not recorded: {detail.get('reason') or 'refused'})"
    return said


def bulk_line(detail: dict[str, Any]) -> str:
    given = detail.get("outcomes")
    outcomes: dict[str, Any] = given if isinstance(given, dict) else {}
    done = sum(outcome == "accepted" for outcome in outcomes.values())
    return (f"{answer_words(detail.get('value'))} in bulk: {done} of {len(outcomes)} "
            f"interrupt{'s' if len(outcomes) != 1 else ''} answered")
