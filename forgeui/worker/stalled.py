"""Jobs a dead worker held: found by its heartbeat, handed back to the queue.

A worker beats every ``FORGE_WORKER_HEARTBEAT_SECONDS``; one silent for
``STALLED_BEATS`` beats is dead, and the jobs it was running are stalled. ``recover_runs``
retries each (every task finds work already done and stops) and recovers the run behind
it, whose node the dead worker was in the middle of.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from forgeui.models import Answer
from forgeui.worker import status

STALLED_BEATS = 6


def stalled_after() -> float:
    return settings.FORGE_WORKER_HEARTBEAT_SECONDS * STALLED_BEATS


def stalled_jobs() -> list[tuple[int, str, list[Any]]]:
    """(job id, task path, task args) of each job a dead worker was running."""
    if not status.queue_enabled():
        return []
    from procrastinate.contrib.django.models import ProcrastinateJob

    silent_since = timezone.now() - timedelta(seconds=stalled_after())
    jobs = ProcrastinateJob.objects.filter(status="doing").filter(
        Q(worker__isnull=True) | Q(worker__last_heartbeat__lt=silent_since))
    return [(job.id, job.args.get("path", ""), job.args.get("args", [])) for job in jobs]


def retry(job_id: int) -> None:
    from procrastinate.contrib.django import app

    app.job_manager.retry_job_by_id(job_id, retry_at=timezone.now())


def thread_of(path: str, args: list[Any]) -> str | None:
    """The root thread whose run a driving task was going on with, if it was one."""
    name = path.rsplit(".", 1)[-1]
    if name == "start_run_task":
        return str(args[1])
    if name == "recover_run_task":
        return str(args[0])
    if name == "apply_answer_task":
        return Answer.objects.filter(pk=args[0]).values_list(
            "interrupt__root_thread_id", flat=True).first()
    return None
