"""What the workers are doing, read from procrastinate's tables: for ``/readyz`` and
``/metrics``. Every function answers from one query and is empty without the queue."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone


def queue_enabled() -> bool:
    return settings.FORGE_QUEUE == "procrastinate"


def workers() -> list[dict[str, Any]]:
    """Each registered worker: its id, last heartbeat, seconds since, jobs in flight."""
    if not queue_enabled():
        return []
    from procrastinate.contrib.django.models import ProcrastinateWorker

    now = timezone.now()
    rows = (ProcrastinateWorker.objects.annotate(
        in_flight=Count("procrastinatejob", filter=Q(procrastinatejob__status="doing")))
        .values("id", "last_heartbeat", "in_flight").order_by("id"))
    return [{"id": row["id"], "last_heartbeat": row["last_heartbeat"].isoformat(),
             "seconds_ago": round((now - row["last_heartbeat"]).total_seconds(), 1),
             "in_flight": row["in_flight"]} for row in rows]


def queue() -> dict[str, tuple[int, datetime | None]]:
    """Per queue: jobs waiting to start and when the oldest of them was deferred."""
    if not queue_enabled():
        return {}
    from procrastinate.contrib.django.models import ProcrastinateJob

    rows = (ProcrastinateJob.objects.filter(status="todo").values("queue_name")
            .annotate(depth=Count("id", distinct=True), oldest=Min("procrastinateevent__at")))
    return {row["queue_name"]: (row["depth"], row["oldest"]) for row in rows}
