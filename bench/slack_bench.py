"""Slack approvals against a local stand-in of Slack's Web API.

    python bench/slack_bench.py [--db sqlite|postgres] [--interrupts 200]

Two latencies, one interrupt at a time, as the embedded default runs them (graphs and
notifications on the web process's thread pools):

- created → posted: from starting a run that pauses at once to ``chat.postMessage``
  reaching the stand-in (an upper bound: the run's own start is included). Target p95 < 1 s.
- press → resumed: from a signed Approve press reaching ``/slack/events`` (Django's test
  client, no network) to the run completed in the database. Target p95 < 500 ms.

Both are measured after one warm-up interrupt (the first pays for imports and for
starting the thread pools). PostgreSQL uses the database ``forge_bench`` on 127.0.0.1,
created fresh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

SECRET = "bench-signing-secret"
POLL_S = 0.001
GIVE_UP_S = 30.0


def ask(order: dict[str, Any], ctx: Any) -> Any:
    return ctx.interrupt({"question": "Ship it?", "version": order.get("version")})


def bench_slack() -> Any:
    from runtime import DurableExecutor

    return DurableExecutor(nodes=[("ask", ask), ("done", lambda answer: answer)],
                           name="bench_slack")


def set_up(db: str, api_url: str) -> Any:
    os.environ.update(FORGE_GRAPHS=json.dumps({"bench_slack": "slack_bench:bench_slack"}),
                      FORGE_SLACK_BOT_TOKEN="xoxb-bench", FORGE_SLACK_SIGNING_SECRET=SECRET,
                      FORGE_SLACK_CHANNEL="CBENCH", FORGE_SLACK_API_URL=api_url)
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # no line per applied answer
    os.environ.pop("REDIS_URL", None)  # the embedded default: thread pools in this process
    from store_vs_langgraph import django_on_fresh

    django_on_fresh(db)
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from forgeui.slack import linking
    from forgeui.slack.models import LinkedVia

    settings.DEBUG = False  # as deployed: DEBUG keeps every statement
    call_command("migrate", verbosity=0)
    starter = User.objects.create_user("starter")
    starter.groups.add(Group.objects.get(name="supervisor"))
    reviewer = User.objects.create_user("reviewer")
    reviewer.groups.add(Group.objects.get(name="reviewer"))
    linking.link(reviewer, "U1", "", LinkedVia.COMMAND, by=None)
    return starter


def wait_for(found: Any, what: str) -> Any:
    deadline = time.monotonic() + GIVE_UP_S
    while (value := found()) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(POLL_S)
    return value


def one(starter: Any, slack: Any, index: int) -> tuple[float, float]:
    """(created → posted, press → resumed) in ms for one interrupt."""
    from django.test import Client

    from forgeui.models import Run
    from forgeui.runs import services
    from tests.forgeui.slack.standin import buttons, press_payload, signed_body

    seen = len(slack.of("chat.postMessage"))
    t0 = time.perf_counter()
    started = services.start_run(starter, "bench_slack", {"version": index})
    posted = wait_for(lambda: (slack.of("chat.postMessage")[seen:] or [None])[0],
                      "chat.postMessage")
    t1 = time.perf_counter()
    button = buttons(posted.args["blocks"])["approve"]
    body, headers = signed_body(SECRET, press_payload(button, "U1", "CBENCH", "1.0"))
    t2 = time.perf_counter()
    reply = Client(HTTP_HOST="localhost").post(
        "/slack/events", body, content_type="application/x-www-form-urlencoded",
        headers=headers)
    assert reply.status_code == 200, reply.content
    done = Run.objects.filter(pk=started.run_id, status="completed")
    wait_for(lambda: True if done.exists() else None, "the run to complete")
    return (t1 - t0) * 1000, (time.perf_counter() - t2) * 1000


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--interrupts", type=int, default=200)
    args = parser.parse_args()
    from tests.forgeui.slack.standin import SlackStandIn

    with SlackStandIn() as slack:
        starter = set_up(args.db, slack.url)
        one(starter, slack, -1)
        pairs = [one(starter, slack, i) for i in range(args.interrupts)]
        from forgeui.runs.backends import wait_for_tasks

        wait_for_tasks(60)  # the last updates, before the stand-in and the process end
        updates = len(slack.of("chat.update"))
    posted, resumed = [p for p, _ in pairs], [r for _, r in pairs]
    print(f"{args.db}: {args.interrupts} interrupts (after one warm-up), "
          f"{updates} messages updated")
    print(f"  created → posted  p50 {statistics.median(posted):7.1f} ms  "
          f"p95 {p95(posted):7.1f} ms")
    print(f"  press → resumed   p50 {statistics.median(resumed):7.1f} ms  "
          f"p95 {p95(resumed):7.1f} ms")
    print("targets")
    print(f"  {'PASS' if p95(posted) < 1000 else 'FAIL'}  created → posted p95 < 1 s")
    print(f"  {'PASS' if p95(resumed) < 500 else 'FAIL'}  press → resumed p95 < 500 ms")


if __name__ == "__main__":
    main()
