"""Run in a forge process of its own (``manage.py shell -c``), on the embedded backend:
start LangGraph runs whose async node awaits beside forge runs that await too, wait until
all have paused, answer every one, wait until all have ended; print what it saw as JSON."""

from __future__ import annotations

import json
import time
from typing import Any

from forgeui.models import Interrupt
from forgeui.runs import backends, services

SECONDS = 1.0
LANGGRAPH_RUNS = 8
FORGE_RUNS = 4


def starts() -> list[tuple[str, dict[str, Any]]]:
    return ([("lg_async", {"log": [], "seconds": SECONDS})] * LANGGRAPH_RUNS
            + [("waiting", {"seconds": SECONDS})] * FORGE_RUNS)


def main() -> None:
    begun = time.monotonic()
    started = [services.start_run(None, graph, input) for graph, input in starts()]
    backends.wait_for_tasks(120)
    paused_s = time.monotonic() - begun
    threads = [s.thread_id for s in started]
    for asked in Interrupt.objects.filter(root_thread_id__in=threads, status="pending"):
        services.answer_interrupt(None, asked.pk, "yes")
    backends.wait_for_tasks(120)
    print(json.dumps({"paused_s": paused_s, "threads": threads}))
