"""``manage.py recover_runs``: go on with runs an executor left behind (crash, kill, bug)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from forgeui.apps import OPERATIONS_CHECKS
from forgeui.models import Answer, AuditEntry, Run, SteeringNote
from forgeui.runs.backends import wait_for_tasks
from forgeui.runs.tasks import (
    apply_answer_task,
    apply_steering_task,
    cancel_run_task,
    recover_run_task,
    start_run_task,
)
from forgeui.worker.stalled import retry, stalled_jobs, thread_of


class Command(BaseCommand):
    help = ("Re-enqueue root runs left running or failed, starts accepted but never begun, "
            "answers and steering notes accepted but never applied, and cancels of runs "
            "still paused, and the jobs of workers whose heartbeat stopped. Pick --older-than "
            "above your slowest node: a live executor that has not saved for that long is "
            "taken over.")
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=float, default=60.0, metavar="SECONDS",
                            help="only runs and answers untouched this long (default 60)")
        parser.add_argument("--dry-run", action="store_true", help="list, change nothing")

    def handle(self, *args: Any, older_than: float, dry_run: bool, **options: Any) -> None:
        age = timedelta(seconds=older_than)
        runs = list(Run.objects.stuck(age).values_list("thread_id", "run_id", "status"))
        stalled = stalled_jobs()
        runs += dead_workers_runs(stalled, {thread for thread, _, _ in runs})
        starts = list(AuditEntry.objects.starts_never_begun(age))
        answers = list(Answer.objects.unapplied(age).values_list("pk", flat=True))
        notes = list(SteeringNote.objects.unapplied(age).values_list("pk", flat=True))
        cancels = list(dict.fromkeys(AuditEntry.objects.cancels_not_applied(age)
                                     .values_list("run_id", flat=True)))
        for thread_id, run_id, status in runs:
            self.stdout.write(f"recover thread {thread_id} (run {run_id}, {status})")
            if not dry_run:
                recover_run_task.enqueue(thread_id)
        for job_id, path, job_args in stalled:
            self.stdout.write(f"retry job {job_id} of a dead worker: {path}{tuple(job_args)}")
            if not dry_run:  # its task finds done work done; the run is recovered above
                retry(job_id)
        for start in starts:
            graph = start.detail.get("graph", "")
            self.stdout.write(f"start run {start.run_id} ({graph} on thread {start.thread_id})")
            if not dry_run:  # the same request id: a start that did begin meanwhile is a no-op
                start_run_task.enqueue(graph, start.thread_id, start.run_id)
        for answer_id in answers:
            self.stdout.write(f"apply answer {answer_id}")
            if not dry_run:
                apply_answer_task.enqueue(answer_id)
        for note_id in notes:
            self.stdout.write(f"apply steering note {note_id}")
            if not dry_run:  # a note applied meanwhile is skipped: the task reads applied_at
                apply_steering_task.enqueue(note_id)
        for run_id in cancels:
            self.stdout.write(f"cancel run {run_id}")
            if not dry_run:  # a run cancels once: a second request finds it cancelled
                cancel_run_task.enqueue(run_id)
        wait_for_tasks()
        self.stdout.write(f"{len(runs)} run(s), {len(starts)} start(s), {len(answers)} "
                          f"answer(s), {len(notes)} note(s), {len(cancels)} cancel(s) "
                          f"re-enqueued; {len(stalled)} job(s) of dead workers retried")


def dead_workers_runs(stalled: list[tuple[int, str, list[Any]]],
                      known: set[str]) -> list[tuple[str, str, str]]:
    """The runs a dead worker was driving, however recently they saved."""
    threads = {thread_of(path, args) for _, path, args in stalled} - known - {None}
    return list(Run.objects.filter(thread_id__in=threads, status__in=["running", "failed"])
                .values_list("thread_id", "run_id", "status"))
