"""Mirror a checkpoint into the ``Run`` and ``Interrupt`` rows, inside the save transaction.

The checkpoint is the truth; these rows exist so the inbox, the API and the admin can
query runs and interrupts without unpacking JSON. A row a person already changed (an
interrupt answered through the dashboard before the runtime applied it) is never moved
back to pending.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from runtime.checkpoint import Checkpoint

from ..models import EventKind, Interrupt, InterruptStatus, Run, RunStatus
from ..models import assignees as assignment  # the stored form of assignees
from ..models.events import EventDraft

# What a later checkpoint of a run can change. Its thread, tree, graph and place are fixed
# when the row is made (a fork makes new run ids).
RUN_UPDATE_FIELDS = ("status", "output", "error", "latest_checkpoint_id", "updated_at")


def from_ms(value: Any, default: datetime) -> datetime:
    """The runtime counts milliseconds since the epoch; the database wants datetimes."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return default


def sync_rows(cp: Checkpoint, using: str, was_pending: frozenset[str] | None = None,
              run_exists: bool = False) -> list[EventDraft]:
    """Mirror ``cp`` into its run's row and interrupt rows; return the events deserved.
    ``was_pending``: the interrupts pending at the checkpoint ``cp`` follows, when known;
    ``run_exists``: that checkpoint mirrored this same run, so its row is there. (A run
    moved to running by an accepted answer or a recover was announced when it was
    accepted, so a claim's save announces nothing.)"""
    if not run_exists or not update_run(cp, using):
        upsert_run(cp, using)
    drafts = sync_interrupts(cp, using, was_pending)
    if drafts or cp.status != RunStatus.RUNNING or cp.parent_id is None:
        drafts.append(EventDraft(EventKind.RUN_UPDATED, cp.run_id, root_of(cp),
                                 data={"status": cp.status, "checkpoint_id": cp.id}))
    return drafts


def root_of(cp: Checkpoint) -> str:
    return cp.root_thread_id or cp.thread_id


def run_row(cp: Checkpoint) -> Run:
    now = timezone.now()
    started_by = cp.metadata.get("started_by")
    # input, started_by and created_at keep the values of the run's first checkpoint.
    return Run(
        run_id=cp.run_id, thread_id=cp.thread_id, root_thread_id=root_of(cp),
        parent_run_id=cp.parent_run_id, graph=cp.graph, namespace=cp.namespace,
        sub_agent_id=cp.sub_agent_id or "", status=cp.status, input=run_input(cp),
        output=cp.output, error=cp.error, latest_checkpoint_id=cp.id,
        started_by_id=started_by if isinstance(started_by, int) else None,
        created_at=from_ms(cp.created_at, now), updated_at=now,
    )


def update_run(cp: Checkpoint, using: str) -> bool:
    """Move the run's row to ``cp`` (what a later checkpoint can change); False if the
    row is not there."""
    return bool(Run.objects.using(using).filter(pk=cp.run_id).update(
        status=cp.status, output=cp.output, error=cp.error, latest_checkpoint_id=cp.id,
        updated_at=timezone.now()))


def upsert_run(cp: Checkpoint, using: str) -> None:
    Run.objects.using(using).bulk_create(
        [run_row(cp)], update_conflicts=True, unique_fields=["run_id"],
        update_fields=list(RUN_UPDATE_FIELDS))


def run_input(cp: Checkpoint) -> Any:
    """What the run was started with, readable while it is at its first step."""
    if cp.step == 0 and len(cp.engine.tasks) == 1:
        return cp.engine.tasks[0].get("input")
    return None


def ended(cp: Checkpoint) -> list[dict[str, Any]]:
    """The interrupts this save ended: what the executor added since the last save, or,
    for a checkpoint built by hand, every one it lists."""
    if cp.additions is not None:
        return cp.additions.resolved
    return cp.resolved


def sync_interrupts(cp: Checkpoint, using: str,
                    was_pending: frozenset[str] | None = None) -> list[EventDraft]:
    """Create, move and close interrupt rows. What was pending before says which rows
    exist; when that is not known, the rows are read. A row a person already moved away
    from pending stays as it is."""
    closing = ended(cp)
    pending = [i["id"] for i in cp.interrupts]
    if not pending and not closing:
        return []
    rows = Interrupt.objects.using(using)
    if was_pending is None:
        ids = pending + [r["id"] for r in closing]
        statuses = dict(rows.filter(pk__in=ids).values_list("id", "status"))
        known: frozenset[str] = frozenset(statuses)
    else:
        statuses, known = {}, was_pending
    drafts = create_pending(cp, [i for i in cp.interrupts if i["id"] not in known], using)
    # Like the runtime's Interrupt.checkpoint_id: the run's latest checkpoint, which a
    # client sends back as expected_checkpoint_id. One with an accepted answer takes no
    # other answer, so its row keeps the checkpoint it was answered at.
    answered = cp.engine.answers
    still_pending = [i for i in pending if i in known and i not in answered]
    if still_pending:
        rows.filter(pk__in=still_pending).update(checkpoint_id=cp.id)
    for data in closing:
        if statuses.get(data["id"], InterruptStatus.PENDING) != InterruptStatus.PENDING:
            continue
        exists = data["id"] in known or rows.filter(pk=data["id"]).exists()
        drafts.extend(resolve(cp, data, exists=exists, using=using))
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
        summary_fields=data.get("summary_fields") or [],
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
        moved = Interrupt.objects.using(using).filter(
            pk=data["id"], status=InterruptStatus.PENDING,
        ).update(status=status, answered_at=answered_at)
    else:
        row = interrupt_row(cp, data, status)
        row.answered_at = answered_at
        moved = len(Interrupt.objects.using(using).bulk_create([row], ignore_conflicts=True))
    kind = (EventKind.INTERRUPT_CANCELLED if status == InterruptStatus.CANCELLED
            else EventKind.INTERRUPT_ANSWERED)
    return [EventDraft(kind, cp.run_id, root_of(cp), data["id"])] if moved else []
