"""A run row's status between the runtime's saves: ``running`` while work is in flight.

The store mirrors each checkpoint's status into the ``Run`` rows, but between two saves
the checkpoint can be out of date: an accepted answer waits for its task, and a node
resumed inside a sub-agent works for as long as it likes before its run saves again.
The services mark those rows ``running`` when they hand work to a task; the next save
brings the true status back. When a task finds nothing to do (its answer went stale, or
a recover found the run already settled), ``settle`` puts back what the checkpoints say,
so a row never reads ``running`` with nobody working on it and nothing queued.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils import timezone

from forgeui.models import Answer, EventKind, Run, RunStatus
from forgeui.models.events import EventDraft, publish_on_commit
from forgeui.store import DjangoCheckpointStore


def chain(run_id: str, root_thread_id: str) -> list[str]:
    """``run_id`` and the runs above it, up to the root of its tree."""
    parents = dict(Run.objects.filter(root_thread_id=root_thread_id)
                   .values_list("run_id", "parent_run_id"))
    found: list[str] = []
    current: str | None = run_id
    while current and current not in found:
        found.append(current)
        current = parents.get(current)
    return found


def mark_working(run_ids: list[str], root_thread_id: str,
                 before: Sequence[EventDraft] = ()) -> list[str]:
    """Show paused or failed ``run_ids`` as running (in the caller's transaction), and
    tell the live pages once it commits, after the events ``before`` (one write for
    both); the runs moved."""
    rows = Run.objects.filter(pk__in=run_ids).exclude(
        status__in=[RunStatus.RUNNING, RunStatus.COMPLETED, RunStatus.CANCELLED])
    moved = list(rows.values_list("run_id", flat=True))
    if moved:
        Run.objects.filter(pk__in=moved).update(status=RunStatus.RUNNING, error=None,
                                                updated_at=timezone.now())
    publish_on_commit([*before, *(_updated(run_id, root_thread_id, RunStatus.RUNNING)
                                  for run_id in moved)])
    return moved


def answer_accepted(run_id: str, root_thread_id: str,
                    before: Sequence[EventDraft] = ()) -> list[str]:
    """An answer was accepted: the run it pauses, and every run above, will work on it
    (their events go out after ``before``, the answer's own)."""
    return mark_working(chain(run_id, root_thread_id), root_thread_id, before)


def settle(root_thread_id: str) -> list[str]:
    """Put the status of the tree's ``running`` rows back to their checkpoints' when
    nothing is in flight: no answer waits to be applied and the root is not running
    (a running root is being driven, or is left to ``recover_runs``). The runs moved."""
    if Answer.objects.unapplied().filter(interrupt__root_thread_id=root_thread_id).exists():
        return []
    store = DjangoCheckpointStore()
    root = store.load_head_sync(root_thread_id)
    if root is None or root.status == RunStatus.RUNNING:
        return []
    moved: list[tuple[str, str]] = []
    for run in Run.objects.filter(root_thread_id=root_thread_id, status=RunStatus.RUNNING):
        latest = root if run.run_id == root.run_id else store.load_run_head_sync(run.run_id)
        if latest is None or latest.status == RunStatus.RUNNING:
            continue
        # Only while the row still shows that checkpoint: a save meanwhile knows better.
        if Run.objects.filter(pk=run.run_id, status=RunStatus.RUNNING,
                              latest_checkpoint_id=latest.id).update(
                status=latest.status, error=latest.error, updated_at=timezone.now()):
            moved.append((run.run_id, latest.status))
    publish_on_commit([_updated(run_id, root_thread_id, status) for run_id, status in moved])
    return [run_id for run_id, _ in moved]


def _updated(run_id: str, root_thread_id: str, status: str) -> EventDraft:
    return EventDraft(EventKind.RUN_UPDATED, run_id, root_thread_id, data={"status": status})
