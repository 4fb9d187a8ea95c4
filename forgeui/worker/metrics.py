"""Prometheus metrics, read from the database at each scrape.

Every figure is a row count or an aggregate of rows every process shares, so any web
process answers the same scrape and no multiprocess directory is needed: runs in flight
and the heartbeat of each worker, queue depth and the oldest job's age per queue,
pending interrupts, time to decision, resumes and runs by status, per graph.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, DurationField, ExpressionWrapper, F, Sum
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from forgeui.models import Answer, Interrupt, Run
from forgeui.worker import status


class ForgeCollector(Collector):
    """One scrape: a handful of aggregate queries."""

    def collect(self) -> Iterator[Metric]:
        yield from worker_metrics()
        yield from queue_metrics()
        yield from graph_metrics()


def worker_metrics() -> Iterator[Metric]:
    in_flight = GaugeMetricFamily("forge_worker_runs_in_flight",
                                  "Jobs a forge_worker is running now", labels=["worker"])
    beat = GaugeMetricFamily("forge_worker_heartbeat_age_seconds",
                             "Seconds since a forge_worker's last heartbeat", labels=["worker"])
    for worker in status.workers():
        in_flight.add_metric([str(worker["id"])], worker["in_flight"])
        beat.add_metric([str(worker["id"])], worker["seconds_ago"])
    yield in_flight
    yield beat


def queue_metrics() -> Iterator[Metric]:
    depth = GaugeMetricFamily("forge_queue_depth", "Jobs waiting to start", labels=["queue"])
    age = GaugeMetricFamily("forge_queue_oldest_job_age_seconds",
                            "Age of the oldest job waiting to start", labels=["queue"])
    now = timezone.now()
    for queue, (count, oldest) in status.queue().items():
        depth.add_metric([queue], count)
        age.add_metric([queue], (now - oldest).total_seconds() if oldest else 0.0)
    yield depth
    yield age


def graph_metrics() -> Iterator[Metric]:
    pending = GaugeMetricFamily("forge_pending_interrupts", "Interrupts waiting for a person",
                                labels=["graph"])
    for row in Interrupt.objects.pending().values("run__graph").annotate(n=Count("id")):
        pending.add_metric([row["run__graph"]], row["n"])
    yield pending
    runs = GaugeMetricFamily("forge_runs", "Runs by status", labels=["graph", "status"])
    for row in Run.objects.values("graph", "status").annotate(n=Count("run_id")):
        runs.add_metric([row["graph"], row["status"]], row["n"])
    yield runs
    yield from answer_metrics()


def answer_metrics() -> Iterator[Metric]:
    resumes = CounterMetricFamily("forge_resumes", "Answers applied to their runs",
                                  labels=["graph"])
    decided = SummaryMetricFamily("forge_decision_seconds",
                                  "Time from an interrupt to its answer", labels=["graph"])
    waited = ExpressionWrapper(F("created_at") - F("interrupt__created_at"),
                               output_field=DurationField())
    rows = (Answer.objects.values("interrupt__run__graph")
            .annotate(n=Count("id"), applied=Count("applied_at"), waited=Sum(waited)))
    for row in rows:
        graph = row["interrupt__run__graph"]
        resumes.add_metric([graph], row["applied"])
        seconds = row["waited"].total_seconds() if row["waited"] else 0.0
        decided.add_metric([graph], count_value=row["n"], sum_value=seconds)
    yield resumes
    yield decided
