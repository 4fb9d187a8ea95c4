"""What an audit entry was about, in words: the interrupt it touched, and what was decided.

"Approve this transfer? · amount 500 · payee ACME → Approved" instead of an id and a
JSON detail. The interrupts of a page (or of an export's chunk) are read in one query.
Where the reader may not answer in an entry's team, the keys its run's interrupts mark
sensitive are masked in its detail and its words.
"""

from __future__ import annotations

import copy
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
from forgeui.team.sensitive import mask
from forgeui.web.visibility import Whole, masked_copy, nobody

DECIDING = ("answer", "answer.refused")


def described(entries: Iterable[AuditEntry], whole: Whole = nobody,
              ) -> Iterator[tuple[AuditEntry, str]]:
    """Each entry with its line ("" when there is nothing to say in words); ``whole(team)``
    says whether sensitive keys of that team's entries are shown unmasked."""
    listed = list(entries)
    interrupts = interrupts_named(listed)
    keys = run_keys({e.run_id for e in listed if e.run_id and not whole(e.team)})
    for entry in listed:
        interrupt = interrupts.get(entry.object_id)
        if whole(entry.team):
            yield entry, describe(entry, interrupt)
        else:
            yield masked_line(entry, interrupt, keys.get(entry.run_id or "", frozenset()))


def interrupts_named(entries: list[AuditEntry]) -> dict[str, Interrupt]:
    """The interrupts the entries are about, with their runs, in one query."""
    ids = {e.object_id for e in entries if e.object_type == "interrupt" and e.object_id}
    return Interrupt.objects.select_related("run").in_bulk(ids) if ids else {}


def masked_line(entry: AuditEntry, interrupt: Interrupt | None,
                run_keys: frozenset[str]) -> tuple[AuditEntry, str]:
    """``entry`` and its line with its run's and its interrupt's sensitive keys masked."""
    if interrupt is None:
        seen = masked_entry(entry, run_keys)
        return seen, describe(seen, None)
    seen = masked_entry(entry, run_keys | frozenset(interrupt.sensitive or ()))
    return seen, describe(seen, masked_copy(interrupt))


def run_keys(run_ids: set[str]) -> dict[str, frozenset[str]]:
    """The keys each run's interrupts mark sensitive, in one query (none for no runs)."""
    found: dict[str, set[str]] = {}
    if not run_ids:
        return {}
    marked = (Interrupt.objects.filter(run_id__in=run_ids).exclude(sensitive=[])
              .values_list("run_id", "sensitive"))
    for run_id, names in marked:
        found.setdefault(run_id, set()).update(names or ())
    return {run_id: frozenset(names) for run_id, names in found.items()}


def masked_entry(entry: AuditEntry, keys: frozenset[str]) -> AuditEntry:
    """A copy of ``entry`` to show, its detail masked (the chain's row is untouched)."""
    if not keys:
        return entry
    seen = copy.copy(entry)
    seen.detail = mask(entry.detail, keys)
    return seen


def described_in_chunks(entries: Iterable[AuditEntry], size: int = 500,
                        whole: Whole = nobody) -> Iterator[tuple[AuditEntry, str]]:
    """``described`` for an export: one lookup per ``size`` entries, never all at once."""
    found = iter(entries)
    while chunk := list(islice(found, size)):
        yield from described(chunk, whole)


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
