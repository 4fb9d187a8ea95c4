"""Handing a task its job together with the transaction that records the work."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django_tasks.base import Task


def enqueue_on_commit(task: Task[Any, Any], *args: Any) -> None:
    """Enqueue ``task`` with the transaction's work: inside it where the backend queues in
    the same database (``transactional``), so the job commits, or not, with what it refers
    to; else once it commits, logging (not raising) a failure: its work is recorded by then
    (a start or cancel as its audit row, an answer or note as its row, a recovery as its
    run marked running), and ``recover_runs`` enqueues what a failure left behind."""
    if getattr(task.get_backend(), "transactional", False):
        task.enqueue(*args)
        return

    def enqueue() -> None:  # a function, not a partial: Django logs a failure by its name
        task.enqueue(*args)

    transaction.on_commit(enqueue, robust=True)
