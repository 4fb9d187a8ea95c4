"""Mirror a checkpoint into the ``Run`` and ``Interrupt`` rows, inside the save transaction.

The checkpoint is the truth; these rows exist so the inbox, the API and the admin can
query runs and interrupts without unpacking JSON. A row a person already changed (an
interrupt answered through the dashboard before the runtime applied it) is never moved
back to pending.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from runtime.checkpoint import Checkpoint

from . import assignment, fastsql
from .events import EventDraft
from .models import EventKind, Interrupt, InterruptStatus, Run, RunStatus

# What a later checkpoint of a run can change. Its thread, tree, graph and place are fixed
# when the row is made (a fork makes new run ids), and leaving them out of the upsert
# spares their indexes a write per save.
RUN_UPDATE_FIELDS = ("status", "output", "error", "latest_checkpoint_id", "updated_at")


def from_ms(value: Any, default: datetime) -> datetime:
    """The runtime counts milliseconds since the epoch; the database wants datetimes."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return default


def sync_rows(cp: Checkpoint, using: str) -> list[EventDraft]:
    """Sync the interrupts (the run row is the caller's); return the events deserved."""
    drafts = sync_interrupts(cp, using)
    if drafts or cp.status != RunStatus.RUNNING or cp.parent_id is None:
        drafts.append(EventDraft(EventKind.RUN_UPDATED, cp.run_id, root_of(cp),
                                 data={"status": cp.status, "checkpoint_id": cp.id}))
    return drafts


def root_of(cp: Checkpoint) -> str:
    return cp.root_thread_id or cp.thread_id


def run_row(cp: Checkpoint) -> dict[str, Any]:
    """The ``Run`` row's values; an upsert updates only ``RUN_UPDATE_FIELDS``."""
    now = timezone.now()
    started_by = cp.metadata.get("started_by")
    # input, started_by and created_at keep the values of the run's first checkpoint.
    return {
        "run_id": cp.run_id, "thread_id": cp.thread_id, "root_thread_id": root_of(cp),
        "parent_run": cp.parent_run_id, "graph": cp.graph, "namespace": cp.namespace,
        "sub_agent_id": cp.sub_agent_id or "", "status": cp.status, "input": run_input(cp),
        "output": cp.output, "error": cp.error, "latest_checkpoint_id": cp.id,
        "started_by": started_by if isinstance(started_by, int) else None,
        "created_at": from_ms(cp.created_at, now), "updated_at": now,
    }


def upsert_run(cp: Checkpoint, using: str) -> None:
    fastsql.insert(Run, run_row(cp), using, conflict="run_id", update=RUN_UPDATE_FIELDS)


def run_input(cp: Checkpoint) -> Any:
    """What the run was started with, readable while it is at its first step."""
    if cp.step == 0 and len(cp.tasks) == 1:
        return cp.tasks[0].get("input")
    return None


@dataclass(frozen=True, slots=True)
class Synced:
    """What a committed save wrote for its checkpoint: the interrupts pending and ended,
    and the run whose row it mirrored (None: no checkpoint, a thread's first save)."""

    pending: frozenset[str]
    resolved: frozenset[str]
    run_id: str | None


class _SyncedIds:
    """What recently saved checkpoints synced (``Synced``), by checkpoint id.

    The next save of a thread finds what changed since its parent without reading the
    rows back (``saveplan.plan_save``), and whether its run's row is already there.
    Only committed checkpoints can be parents, so an entry is never wrong; a miss
    (another process saved the parent, or it aged out) reads the rows instead.
    """

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self.entries: OrderedDict[str, Synced] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, checkpoint_id: str | None) -> Synced | None:
        if checkpoint_id is None:
            return Synced(frozenset(), frozenset(), None)  # a thread's first: all is new
        with self.lock:
            return self.entries.get(checkpoint_id)

    def put(self, checkpoint_id: str, pending: list[str], resolved: list[str],
            run_id: str) -> None:
        with self.lock:
            self.entries[checkpoint_id] = Synced(frozenset(pending), frozenset(resolved), run_id)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)


synced_ids = _SyncedIds()


def sync_interrupts(cp: Checkpoint, using: str) -> list[EventDraft]:
    """The reading path: what the rows say decides (``saveplan`` decides without them)."""
    pending = [i["id"] for i in cp.interrupts]
    resolved = [r["id"] for r in cp.resolved]
    drafts = sync_interrupts_from_rows(cp, pending, resolved, using)
    synced_ids.put(cp.id, pending, resolved, cp.run_id)
    return drafts


def sync_interrupts_from_rows(cp: Checkpoint, pending: list[str], resolved: list[str],
                              using: str) -> list[EventDraft]:
    ids = pending + resolved
    if not ids:
        return []
    known = dict(Interrupt.objects.using(using).filter(pk__in=ids).values_list("id", "status"))
    wanted = set(pending)
    drafts = create_pending(
        cp, [i for i in cp.interrupts if i["id"] in wanted and i["id"] not in known], using)
    still_pending = [i for i in pending if i in known]
    if still_pending:
        # Like the runtime's Interrupt.checkpoint_id: the run's latest checkpoint, which a
        # client sends back as expected_checkpoint_id.
        fastsql.update(Interrupt, {"checkpoint_id": cp.id}, still_pending, using)
    closing = set(resolved)
    for data in cp.resolved:
        if data["id"] in closing and (
            known.get(data["id"], InterruptStatus.PENDING) == InterruptStatus.PENDING
        ):
            drafts.extend(resolve(cp, data, exists=data["id"] in known, using=using))
    return drafts


def interrupt_row(cp: Checkpoint, data: dict[str, Any], status: str) -> Interrupt:
    now = timezone.now()
    deadline = data.get("deadline_at")
    return Interrupt(
        id=data["id"], run_id=data.get("run_id") or cp.run_id,
        thread_id=data.get("thread_id") or cp.thread_id, root_thread_id=root_of(cp),
        node=data.get("node") or "", task_id=data.get("task_id") or "",
        namespace=data.get("namespace") or cp.namespace,
        sub_agent_id=data.get("sub_agent_id") or "",
        checkpoint_id=data.get("checkpoint_id") or cp.id, payload=data.get("payload"),
        order=data.get("order", 0), kind=data.get("kind", "node"),
        has_default=bool(data.get("has_default")), default=data.get("default"),
        assignees=assignment.from_record(data.get("assignees")),
        status=status, created_at=from_ms(data.get("created_at"), from_ms(cp.created_at, now)),
        deadline_at=from_ms(deadline, now) if deadline else None,
    )


def create_pending(cp: Checkpoint, new: list[dict[str, Any]], using: str) -> list[EventDraft]:
    if not new:
        return []
    Interrupt.objects.using(using).bulk_create(
        [interrupt_row(cp, data, InterruptStatus.PENDING) for data in new],
        ignore_conflicts=True,
    )
    return [EventDraft(EventKind.INTERRUPT_CREATED, cp.run_id, root_of(cp), data["id"])
            for data in new]


def resolve(cp: Checkpoint, data: dict[str, Any], exists: bool, using: str) -> list[EventDraft]:
    """Close an interrupt the runtime ended; only a move away from pending is an event."""
    status = (InterruptStatus.CANCELLED if data.get("status") == "cancelled"
              else InterruptStatus.ANSWERED)
    answered_at = from_ms(data.get("answered_at"), timezone.now())
    if exists:
        moved = fastsql.update(Interrupt, {"status": status, "answered_at": answered_at},
                               [data["id"]], using, status=InterruptStatus.PENDING)
    else:
        row = interrupt_row(cp, data, status)
        row.answered_at = answered_at
        moved = len(Interrupt.objects.using(using).bulk_create([row], ignore_conflicts=True))
    kind = (EventKind.INTERRUPT_CANCELLED if status == InterruptStatus.CANCELLED
            else EventKind.INTERRUPT_ANSWERED)
    return [EventDraft(kind, cp.run_id, root_of(cp), data["id"])] if moved else []
