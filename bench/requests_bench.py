"""Approval requests under load: many agents long-polling at once, and new requests
reaching open inboxes.

    python bench/requests_bench.py [--agents 500] [--clients 50] [--requests 50]
                                   [--layer memory|redis]

One daphne process on the production settings over plain HTTP (``DEBUG=0``, SQLite in a
temporary folder; ``--layer redis`` adds ``REDIS_URL``: the Redis channel layer, on a
database of its own).

1. Waiting: ``--agents`` requests are made through ``POST /api/requests`` with an agent
   token; then every agent holds ``GET /api/requests/{id}?wait=60`` at once. A reviewer
   decides them one by one (``POST .../decision``). Reported: requests held, decisions
   seen, the server's RSS growth from before the polls to its peak while they are held,
   and the time from a decision's commit (the interrupt's ``answered_at``) to its agent
   receiving the response: p50, p95, max.
2. Inbox: ``--clients`` websocket inboxes are open (as in ``inbox_bench.py``) while an
   agent makes ``--requests`` requests. Latency = a row's arrival at a client minus the
   commit of its interrupt (the ``interrupt.created`` event's ``created_at``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inbox_bench import client, configure, session_cookie, start_daphne

REDIS_URL = "redis://127.0.0.1:6379/13"  # a database of its own: other layers stay quiet


def seed() -> dict[str, str]:
    """Users, and the tokens of an agent and a reviewer."""
    import os

    from django.contrib.auth.models import User
    from django.core.management import call_command

    from forgeui.management.commands.create_token import agent_user
    from forgeui.models import ApiToken

    call_command("migrate", verbosity=0)
    with open(os.devnull, "w") as quiet:  # DEBUG=0: generated passwords, never printed
        call_command("demo", no_runs=True, force=True, stdout=quiet)
    reviewer = User.objects.get(username="reviewer")
    return {"agent": ApiToken.objects.issue(agent_user("bench-bot"), agent="bench-bot")[1],
            "reviewer": ApiToken.objects.issue(reviewer, name="bench")[1]}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError("no Threads")


def percentiles(values: list[float]) -> dict[str, float]:
    # "inclusive": a p95 never past the largest value seen, however few there are.
    p95 = statistics.quantiles(values, n=20, method="inclusive")[18]
    return {"p50_ms": statistics.median(values), "p95_ms": p95, "max_ms": max(values)}


async def make_requests(base: str, token: str, count: int, tag: str) -> list[str]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        made = []
        for n in range(count):
            response = await http.post("/api/requests", json={
                "title": f"{tag} #{n}", "agent": {"name": "bench-bot", "session": tag},
                "actions": [{"name": "send_email", "args": {"to": f"user{n}@example.com"}}]})
            assert response.status_code == 201, response.text
            made.append(response.json()["id"])
        return made


async def bench_waiting(base: str, pid: int, tokens: dict[str, str],
                        agents: int) -> dict[str, Any]:
    from forgeui.models import Interrupt

    ids = await make_requests(base, tokens["agent"], agents, "waiting")
    before, threads_before = rss_mb(pid), threads(pid)
    seen: dict[str, float] = {}
    limits = httpx.Limits(max_connections=agents + 10, max_keepalive_connections=agents + 10)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=90,
                                 headers={"Authorization": f"Bearer {tokens['agent']}"}) as http:
        async def wait(request_id: str) -> None:
            while True:  # as an agent does: poll again when a poll ends still pending
                response = await http.get(f"/api/requests/{request_id}", params={"wait": 60})
                if response.json()["status"] == "decided":
                    seen[request_id] = time.time()
                    return

        polls = [asyncio.create_task(wait(request_id)) for request_id in ids]
        await asyncio.sleep(3)  # every poll is held by now (each answers only when decided)
        held = sum(not poll.done() for poll in polls)
        held_rss, threads_held = rss_mb(pid), threads(pid)
        peak = held_rss
        async with httpx.AsyncClient(base_url=base, timeout=60, headers={
                "Authorization": f"Bearer {tokens['reviewer']}"}) as reviewer:
            for request_id in ids:
                response = await reviewer.post(f"/api/requests/{request_id}/decision",
                                               json={"decisions": [{"type": "approve"}]})
                assert response.status_code == 200, response.text
                peak = max(peak, rss_mb(pid))
        await asyncio.wait_for(asyncio.gather(*polls), 180)
    answered = await asyncio.to_thread(lambda: dict(
        Interrupt.objects.filter(root_thread_id__in=ids).values_list("root_thread_id",
                                                                     "answered_at")))
    latencies = [(seen[i] - answered[i].timestamp()) * 1000 for i in ids if i in seen]
    return {"agents": agents, "held": held, "decided_seen": len(seen),
            "rss_before_mb": round(before, 1), "rss_peak_mb": round(peak, 1),
            "rss_growth_mb": round(peak - before, 1),
            "rss_held_growth_mb": round(held_rss - before, 1),
            "threads_before": threads_before, "threads_held": threads_held,
            **percentiles(latencies)}


async def bench_inbox(port: int, tokens: dict[str, str], clients: int,
                      requests: int) -> dict[str, Any]:
    from forgeui.models import Event

    base = f"http://127.0.0.1:{port}"
    cookie = await asyncio.to_thread(session_cookie)
    arrivals: list[dict[str, float]] = [{} for _ in range(clients)]
    connected: list[int] = []
    all_in = asyncio.Event()
    sockets = [asyncio.create_task(client(f"ws://127.0.0.1:{port}/ws/inbox/", base, cookie,
                                          arrivals[n], connected, clients, all_in))
               for n in range(clients)]
    await asyncio.wait_for(all_in.wait(), 60)
    ids = await make_requests(base, tokens["agent"], requests, "inbox")
    await asyncio.sleep(2)
    for socket in sockets:
        socket.cancel()
    await asyncio.gather(*sockets, return_exceptions=True)
    committed = await asyncio.to_thread(lambda: {
        interrupt_id: created.timestamp() for interrupt_id, created in Event.objects.filter(
            kind="interrupt.created", root_thread_id__in=ids).values_list("interrupt_id",
                                                                          "created_at")})
    latencies = [(seen[i] - at) * 1000 for seen in arrivals for i, at in committed.items()
                 if i in seen]
    return {"clients": clients, "requests": len(committed), "delivered": len(latencies),
            "expected": len(committed) * clients, **percentiles(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=500)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--layer", choices=["memory", "redis"], default="memory")
    parser.add_argument("--port", type=int, default=8798)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.layer == "redis":
            import os

            os.environ["REDIS_URL"] = REDIS_URL
        env = configure(Path(folder))
        if args.layer == "redis":
            env["REDIS_URL"] = REDIS_URL
        tokens = seed()
        server = start_daphne(env, args.port)
        try:
            base = f"http://127.0.0.1:{args.port}"
            waiting = asyncio.run(bench_waiting(base, server.pid, tokens, args.agents))
            inbox = asyncio.run(bench_inbox(args.port, tokens, args.clients, args.requests))
        finally:
            server.terminate()
            server.wait(10)
    print(f"[{args.layer}] {waiting['agents']} agents long-polling: {waiting['held']} held, "
          f"{waiting['decided_seen']} saw their decision; RSS +{waiting['rss_growth_mb']} MB "
          f"(+{waiting['rss_held_growth_mb']} MB while held; target < 150), threads "
          f"{waiting['threads_before']} -> {waiting['threads_held']}; decision -> agent p50 "
          f"{waiting['p50_ms']:.1f} ms, p95 "
          f"{waiting['p95_ms']:.1f} ms, max {waiting['max_ms']:.1f} ms (target p95 < 250)")
    print(f"[{args.layer}] new request -> {inbox['clients']} inboxes: p50 "
          f"{inbox['p50_ms']:.1f} ms, p95 {inbox['p95_ms']:.1f} ms, max {inbox['max_ms']:.1f} "
          f"ms; delivered {inbox['delivered']}/{inbox['expected']} (target p95 < 500)")
    print(json.dumps({"layer": args.layer, "waiting": waiting, "inbox": inbox}))


if __name__ == "__main__":
    main()
