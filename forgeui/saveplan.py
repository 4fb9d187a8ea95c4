"""What one checkpoint save writes beside the checkpoint, decided before any statement.

``sync.sync_rows`` mirrors a checkpoint into ``Interrupt`` rows and inbox events by
reading and writing as it goes. When the parent checkpoint was saved by this process
(``sync.synced_ids`` knows which interrupts it had), everything can be decided from the
checkpoint alone: which interrupt rows to create, which to point at the new checkpoint,
which to close (only if still pending: a person may have answered it first), and which
events follow. A save can then run as one statement (PostgreSQL) or one short burst of
prepared statements (SQLite). Without that knowledge, ``plan_save`` returns None and the
store takes the reading path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from runtime.checkpoint import Checkpoint

from .events import EventDraft
from .models import EventKind, InterruptStatus, RunStatus
from .sync import from_ms, interrupt_row, root_of, synced_ids


@dataclass(frozen=True, slots=True)
class Closing:
    """An interrupt the runtime ended: moved to ``status`` only while still pending."""

    interrupt_id: str
    status: str
    answered_at: Any
    event: EventDraft


@dataclass(slots=True)
class SavePlan:
    """The rows and events of one save. ``events`` are written whatever the closings do;
    each closing's own event only if it moved its row; ``run_event`` always, or with
    ``run_event_always`` False only if some closing moved its row."""

    cp: Checkpoint
    created: list[dict[str, Any]] = field(default_factory=list)  # Interrupt rows, by column
    kept: list[str] = field(default_factory=list)  # pending ids now at this checkpoint
    closing: list[Closing] = field(default_factory=list)
    events: list[EventDraft] = field(default_factory=list)
    run_event: EventDraft | None = None
    run_event_always: bool = True  # False: only if a closing moved its row
    # The run's row is there: the parent, committed here, mirrored this very run. Its
    # row is then updated in place, with only what a later checkpoint changes.
    run_row_exists: bool = False

    def remember(self) -> None:
        """Record what this checkpoint synced, for the thread's next save."""
        synced_ids.put(self.cp.id, [i["id"] for i in self.cp.interrupts],
                       [r["id"] for r in self.cp.resolved], self.cp.run_id)


def plan_save(cp: Checkpoint) -> SavePlan | None:
    """The save's writes, or None when the interrupt rows must be read to decide them."""
    before = synced_ids.get(cp.parent_id)
    if before is None:
        return None
    was_pending, was_resolved = before.pending, before.resolved
    plan = SavePlan(cp, run_row_exists=before.run_id == cp.run_id)
    root = root_of(cp)
    for data in cp.interrupts:
        if data["id"] in was_pending:
            plan.kept.append(data["id"])
        elif data["id"] not in was_resolved:
            row = interrupt_row(cp, data, InterruptStatus.PENDING)
            # As bulk_create reads a new row: each field's pre_save, in field order.
            plan.created.append({f.attname: f.pre_save(row, True)
                                 for f in row._meta.concrete_fields})
            plan.events.append(EventDraft(EventKind.INTERRUPT_CREATED, cp.run_id, root,
                                          data["id"]))
    for data in cp.resolved:
        if data["id"] in was_resolved:
            continue
        if data["id"] not in was_pending:
            return None  # ended without this process seeing it pending: read its row
        cancelled = data.get("status") == "cancelled"
        kind = EventKind.INTERRUPT_CANCELLED if cancelled else EventKind.INTERRUPT_ANSWERED
        plan.closing.append(Closing(
            data["id"], InterruptStatus.CANCELLED if cancelled else InterruptStatus.ANSWERED,
            from_ms(data.get("answered_at"), timezone.now()),
            EventDraft(kind, cp.run_id, root, data["id"])))
    plan.run_event = EventDraft(EventKind.RUN_UPDATED, cp.run_id, root,
                                data={"status": cp.status, "checkpoint_id": cp.id})
    if not (plan.created or cp.status != RunStatus.RUNNING or cp.parent_id is None):
        if plan.closing:
            plan.run_event_always = False
        else:
            plan.run_event = None
    return plan
