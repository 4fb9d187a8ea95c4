"""Websocket load under Redis: many idle inbox sockets, then a burst of interrupts.

    python bench/ws_load.py [--clients 200] [--idle 60] [--interrupts 100] [--cluster JSON]

Starts the cluster of ``tests/forgeui/deployment/test_cluster.py``
(``tests.forgeui.cluster``: a Redis of its own, a fresh PostgreSQL database, two daphne and
two ``forge_worker`` processes with the production channel layer) unless ``--cluster``
names a running one. ``--clients`` inbox sockets (reviewers with TABS_PER_REVIEWER tabs
each, spread over both daphnes) connect and stay idle for ``--idle`` seconds, longer than
any Redis read timeout; then ``--interrupts`` runs of ``transfer`` are started through the
API, one every ``--gap`` seconds, each pausing at an interrupt. Reported:

- sockets that failed to connect or closed (none may; they connect CONNECT_BATCH at a
  time), rows delivered / expected (every socket, every row);
- arrival latency per (socket, row): when the socket received the row minus the commit
  of its ``interrupt.created`` event row (one machine, one clock): p50, p95, max.

Pass: nothing closed, everything delivered, p95 under 250 ms. Exit status 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forgeui.cluster import Cluster, running
from tests.processes import wait_until

ROW = re.compile(r'<tr id="int-([0-9a-f]+)"')
P95_LIMIT_MS = 250.0
CONNECT_BATCH = 20  # sockets opened together; the next batch waits for their handshakes


class Socket:
    """One idle inbox tab: what arrived when, and whether the server closed it."""

    def __init__(self, url: str, cookie: str) -> None:
        self.url, self.cookie = url, cookie
        self.arrivals: dict[str, float] = {}
        self.closed: str | None = None
        self.open = asyncio.Event()

    async def follow(self, after: int) -> None:
        import websockets

        ws_url = self.url.replace("http://", "ws://") + "/ws/inbox/"
        try:
            async with websockets.connect(
                    ws_url, origin=self.url, max_size=None,
                    additional_headers={"Cookie": f"sessionid={self.cookie}"}) as ws:
                await ws.send(json.dumps({"after": after}))
                self.open.set()
                async for frame in ws:
                    now = time.time()
                    for interrupt_id in ROW.findall(str(frame)):
                        self.arrivals.setdefault(interrupt_id, now)
                self.closed = f"closed by the server: {ws.close_code}"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # what a browser tab would see as a dropped socket
            self.closed = f"{type(exc).__name__}: {exc}"
        self.open.set()


def last_event(forge: Cluster) -> int:
    return int(forge.db.value("SELECT coalesce(max(id), 0) FROM forgeui_event"))


def start_runs(forge: Cluster, count: int, gap: float) -> list[str]:
    run_ids = []
    for n in range(count):
        run_ids.append(forge.start_run(forge.urls[n % len(forge.urls)], "transfer",
                                       {"load": n}))
        time.sleep(gap)
    return run_ids


def committed(forge: Cluster, interrupt_ids: list[str]) -> dict[str, float]:
    """Commit time (epoch s) of each interrupt's ``interrupt.created`` event row."""
    return {row[0]: row[1].timestamp() for row in forge.db.rows(
        "SELECT interrupt_id, created_at FROM forgeui_event WHERE kind = 'interrupt.created' "
        "AND interrupt_id = ANY(%s)", interrupt_ids)}


# Tabs per reviewer: a team of reviewers, each with a few tabs open, well under the
# sockets one user may hold per process.
TABS_PER_REVIEWER = 10

# Reviewers like the demo's (its groups), each signed in once: their session cookies.
SESSIONS = """
import json
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
model = User.objects.get(username="reviewer")
cookies = []
for n in range({count}):
    user, _ = User.objects.get_or_create(username=f"ws-reviewer-{{n}}")
    user.groups.set(model.groups.all())
    client = Client()
    client.force_login(user)
    cookies.append(client.cookies[settings.SESSION_COOKIE_NAME].value)
print(json.dumps(cookies))
"""


def reviewer_sessions(forge: Cluster, count: int) -> list[str]:
    out = forge.manage("shell", "-c", SESSIONS.format(count=count))
    cookies: list[str] = json.loads(out.strip().splitlines()[-1])
    return cookies


async def measure(forge: Cluster, clients: int, idle: float, interrupts: int,
                  gap: float) -> dict[str, Any]:
    cookies = await asyncio.to_thread(reviewer_sessions, forge,
                                    math.ceil(clients / TABS_PER_REVIEWER))
    sockets = [Socket(forge.urls[n % len(forge.urls)], cookies[n // TABS_PER_REVIEWER])
               for n in range(clients)]
    after = last_event(forge)
    tasks = []
    for start in range(0, clients, CONNECT_BATCH):  # tabs open over time, not in one burst
        batch = sockets[start:start + CONNECT_BATCH]
        tasks += [asyncio.create_task(s.follow(after)) for s in batch]
        await asyncio.wait_for(asyncio.gather(*(s.open.wait() for s in batch)), 60)
    failed = sum(s.closed is not None for s in sockets)
    await asyncio.sleep(idle)
    closed_idle = sum(s.closed is not None for s in sockets)
    run_ids = await asyncio.to_thread(start_runs, forge, interrupts, gap)
    await asyncio.to_thread(wait_until, lambda: len(forge.pending(run_ids)) == interrupts,
                            120, "every run to pause", 0.2)
    pending = list(forge.pending(run_ids).values())
    await asyncio.to_thread(wait_until, lambda: all(
        set(pending) <= set(s.arrivals) or s.closed for s in sockets), 30,
        "every socket to show every row", 0.2)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    at = committed(forge, pending)
    latencies = [(s.arrivals[i] - at[i]) * 1000 for s in sockets for i in pending
                 if i in s.arrivals and i in at]
    reasons = sorted({s.closed for s in sockets if s.closed})
    return {"clients": clients, "idle_s": idle, "interrupts": len(pending),
            "failed_to_connect": failed, "closed_while_idle": closed_idle - failed,
            "closed": sum(s.closed is not None for s in sockets), "close_reasons": reasons,
            "delivered": len(latencies), "expected": clients * len(pending),
            "p50_ms": statistics.median(latencies) if latencies else None,
            "p95_ms": statistics.quantiles(latencies, n=20)[18] if len(latencies) > 1
            else None,
            "max_ms": max(latencies) if latencies else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds idle first")
    parser.add_argument("--interrupts", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between starts")
    parser.add_argument("--p95-limit", type=float, default=P95_LIMIT_MS, metavar="MS",
                        help="the p95 that passes (the suite's smoke run only checks delivery)")
    parser.add_argument("--cluster", type=Path, metavar="JSON",
                        help="use the running cluster this file describes "
                             "(tests.forgeui.cluster.describe) instead of starting one")
    args = parser.parse_args()
    with running(args.cluster, "forge-ws-load-") as forge:
        found = asyncio.run(measure(forge, args.clients, args.idle, args.interrupts,
                                    args.gap))
    print(json.dumps(found, indent=2))
    ok = (found["closed"] == 0 and found["delivered"] == found["expected"]
          and found["p95_ms"] is not None and found["p95_ms"] < args.p95_limit)
    print("PASS" if ok else "FAIL", f"(p95 limit {args.p95_limit:.0f} ms)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
