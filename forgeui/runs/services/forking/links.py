"""Which thread is a fork of which, for badges and links both ways.

Read from the ``thread.fork`` audit rows the fork service writes (one per fork, with the
new thread, its root run, the source checkpoint's place and any edits), so a page of
rows costs one query whatever its length.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from forgeui.models import AuditEntry

FORK = "thread.fork"


@dataclass(frozen=True, slots=True)
class ForkLink:
    """One fork: the new thread and where it came from."""

    thread_id: str
    run_id: str
    source_thread_id: str
    source_run_id: str
    source_checkpoint_id: str
    seq: int
    by: str | None
    at: datetime
    edits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def source(self) -> dict[str, Any]:
        """Where the fork was taken: the original thread, run and checkpoint (and its
        place in the thread's timeline, from 1)."""
        return {"thread_id": self.source_thread_id, "run_id": self.source_run_id,
                "checkpoint_id": self.source_checkpoint_id, "seq": self.seq}

    @property
    def marker(self) -> str:
        """``Fork of 1a2b3c4d… at checkpoint #2, by alice``: the fork in one line."""
        at = f" at checkpoint #{self.seq}" if self.seq else ""
        by = f", by {self.by}" if self.by else ""
        return f"Fork of {self.source_thread_id[:8]}…{at}{by}"

    @property
    def edit_summary(self) -> str:
        """``input of draft edited; answer to ask pre-filled``: what the fork changed."""
        return "; ".join(f"input of {e['node']} edited" if e["kind"] == "input"
                         else f"answer to {e['node']} pre-filled" for e in self.edits)


def origins(thread_ids: Iterable[str]) -> dict[str, ForkLink]:
    """The fork link of each of ``thread_ids`` that is a fork, by its thread id."""
    wanted = sorted(set(thread_ids))
    if not wanted:
        return {}
    rows = _rows().filter(detail__new_thread_id__in=wanted)
    return {link.thread_id: link for link in map(_link, rows)}


def origin(thread_id: str) -> ForkLink | None:
    return origins([thread_id]).get(thread_id)


def forks_of(thread_id: str) -> list[ForkLink]:
    """Every fork made from ``thread_id``, oldest first."""
    return [_link(row) for row in _rows().filter(thread_id=thread_id).order_by("created_at")]


def made_from(thread_ids: Iterable[str]) -> dict[str, list[ForkLink]]:
    """The forks made from each of ``thread_ids``, oldest first, by source thread id."""
    found: dict[str, list[ForkLink]] = {}
    rows = _rows().filter(thread_id__in=sorted(set(thread_ids))).order_by("created_at")
    for link in map(_link, rows):
        found.setdefault(link.source_thread_id, []).append(link)
    return found


def _rows() -> Any:
    return AuditEntry.objects.filter(action=FORK).select_related("actor")


def _link(row: AuditEntry) -> ForkLink:
    detail = row.detail or {}
    return ForkLink(
        thread_id=detail.get("new_thread_id", ""), run_id=detail.get("new_run_id", ""),
        source_thread_id=row.thread_id, source_run_id=row.run_id,
        source_checkpoint_id=row.before_checkpoint_id, seq=int(detail.get("seq") or 0),
        by=row.actor.get_username() if row.actor else None, at=row.created_at,
        edits=list(detail.get("edits") or []),
    )
