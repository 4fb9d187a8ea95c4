"""Concurrency benchmark: how many waiting runs two workers hold at once.

    python bench/concurrency_bench.py [--async-runs 400] [--sync-runs 100] [--cluster JSON]
                                      [--warmup 40] [--direct] [--peer VENV]

Starts the cluster of ``tests/forgeui/deployment/test_cluster.py`` (``tests.forgeui.cluster``:
two daphne and two ``forge_worker`` processes, PostgreSQL, Redis) unless ``--cluster``
names a running one. For each kind of node, N runs of a graph whose first node waits 1 s
(``waiting``: ``await asyncio.sleep(1)``, an async model call; ``waiting_sync``:
``time.sleep(1)``, a sync one) and then pauses are started through the API from
``--clients`` threads over both daphnes (``--direct``: queued from one process, past the
API). Reported per kind: seconds from the first start until every run is paused, the
most jobs in flight at once (per worker and in all, sampled from the queue), and each
worker's resident memory afterwards. ``--peer`` then serves the same graph written in
LangGraph (an async node sleeping 1 s, then ``interrupt()``) with ``langgraph dev`` at 10
and at 100 jobs per worker and starts the async runs through its API the same way.
Before each measurement, on both sides, ``--warmup`` runs (at most N) are started and
paused, untimed, so that the figures are those of a server that has been serving: pools
filled, statements prepared.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forgeui.cluster import Cluster, free_port, running, wait_until


def in_flight(forge: Cluster) -> dict[int, int]:
    """Jobs running now, by worker id."""
    return dict(forge.db.rows("SELECT worker_id, count(*) FROM procrastinate_jobs WHERE "
                              "status = 'doing' AND worker_id IS NOT NULL GROUP BY worker_id"))


def worker_rss_mb(database: str) -> list[float]:
    """Resident memory of each forge_worker process serving ``database``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"forge_worker" not in cmdline or database.encode() not in \
                    (proc / "environ").read_bytes():
                continue
            status = (proc / "status").read_text()
        except (OSError, ValueError):
            continue
        found.append(int(status.split("VmRSS:")[1].split()[0]) / 1024)
    return sorted(found)


# Starts recorded and queued from one process, past the API: what the workers alone do.
DIRECT = ("import time; from concurrent.futures import ThreadPoolExecutor; "
          "from forgeui.runs import services; begun = time.time(); "
          "start = lambda n: services.start_run(None, {graph!r}, {{'n': n}}).run_id; "
          "ids = list(ThreadPoolExecutor({clients}).map(start, range({runs}))); "
          "print(begun, time.time(), *ids)")


def start_direct(forge: Cluster, graph: str, runs: int,
                 clients: int) -> tuple[list[str], float, float]:
    """Start ``runs`` runs from ``clients`` threads of one ``manage.py shell``: ids, when
    the first and the last start were queued (epoch s)."""
    code = DIRECT.format(graph=graph, runs=runs, clients=clients)
    out = forge.manage("shell", "-c", code).splitlines()[-1].split()
    return out[2:], float(out[0]), float(out[1])


def start_all(forge: Cluster, graph: str, runs: int, clients: int) -> list[str]:
    """Start ``runs`` runs through the API from ``clients`` threads over both daphnes."""
    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(
            lambda n: forge.start_run(forge.urls[n % 2], graph, {"n": n}), range(runs)))


def warm_up(forge: Cluster, graph: str, runs: int, clients: int) -> None:
    """Start ``runs`` runs and wait for them to pause: what a cluster that has served
    for a while has done (its connection pools filled, its statements prepared)."""
    run_ids = start_all(forge, graph, runs, clients)
    wait_until(lambda: len(forge.pending(run_ids)) == runs, 600, "the warm-up runs to pause",
               pause=0.1)


def measure(forge: Cluster, graph: str, runs: int, clients: int,
            direct: bool, warmup: int = 0) -> dict[str, object]:
    if warmup:
        warm_up(forge, graph, warmup, clients)
    peak: dict[int, int] = {}
    total = [0]
    if direct:
        run_ids, first, last = start_direct(forge, graph, runs, clients)
        begun = time.perf_counter() - (time.time() - first)
        posted = last - first
    else:
        begun = time.perf_counter()
        run_ids = start_all(forge, graph, runs, clients)
        posted = time.perf_counter() - begun

    def paused() -> bool:
        now = in_flight(forge)
        total[0] = max(total[0], sum(now.values()))
        for worker, count in now.items():
            peak[worker] = max(peak.get(worker, 0), count)
        return len(forge.pending(run_ids)) == runs

    wait_until(paused, 600, f"{runs} {graph} runs to pause", pause=0.05)
    return {"graph": graph, "runs": runs, "all_paused_s": round(time.perf_counter() - begun, 2),
            "posted_s": round(posted, 2), "peak_in_flight": total[0],
            "peak_per_worker": sorted(peak.values(), reverse=True),
            "worker_rss_mb": [round(mb) for mb in worker_rss_mb(forge.db.name)]}


PEER_AGENT = """
import asyncio
from typing import TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

class State(TypedDict, total=False):
    n: int
    answer: object

async def think(state: State) -> State:
    await asyncio.sleep(1)
    return {}

def ask(state: State) -> State:
    return {"answer": interrupt({"question": "Go on?"})}

builder = StateGraph(State)
builder.add_node("think", think)
builder.add_node("ask", ask)
builder.add_edge(START, "think")
builder.add_edge("think", "ask")
builder.add_edge("ask", END)
graph = builder.compile()
"""


def call(url: str, method: str, body: Any = None) -> Any:
    """One JSON call to the peer's API."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, method=method, data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"null")


def peer(venv: Path, runs: int, jobs: int, clients: int, warmup: int = 0) -> dict[str, object]:
    """The same graph in LangGraph, served by ``langgraph dev`` (its in-memory Agent
    Server) with ``jobs`` runs per worker: seconds until all ``runs`` are interrupted."""
    with tempfile.TemporaryDirectory(prefix="forge-peer-") as folder:
        (Path(folder) / "agent.py").write_text(PEER_AGENT)
        (Path(folder) / "langgraph.json").write_text(json.dumps(
            {"dependencies": ["."], "graphs": {"agent": "./agent.py:graph"}}))
        port = free_port()
        server = subprocess.Popen(
            [str(venv / "bin" / "langgraph"), "dev", "--no-browser", "--no-reload", "--port",
             str(port), "--n-jobs-per-worker", str(jobs)], cwd=folder,
            env={**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until(lambda: up(base + "/ok"), 120, "langgraph dev")

            def start(n: int) -> None:
                thread = call(base + "/threads", "POST", {})["thread_id"]
                call(f"{base}/threads/{thread}/runs", "POST",
                     {"assistant_id": "agent", "input": {"n": n}})

            def paused(count: int) -> bool:
                return len(call(base + "/threads/search", "POST", {
                    "status": "interrupted", "limit": count + 1})) >= count

            with ThreadPoolExecutor(clients) as pool:  # the same warm-up as forge's
                list(pool.map(start, range(warmup)))
            wait_until(lambda: paused(warmup), 600, "the peer's warm-up runs", pause=0.1)
            begun = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                list(pool.map(start, range(runs)))
            posted = time.perf_counter() - begun
            wait_until(lambda: paused(warmup + runs), 600, "the peer's runs to pause",
                       pause=0.1)
            rss = int((Path("/proc") / str(server.pid) / "status").read_text()
                      .split("VmRSS:")[1].split()[0]) / 1024
            return {"graph": f"langgraph dev, {jobs} jobs per worker", "runs": runs,
                    "all_paused_s": round(time.perf_counter() - begun, 2),
                    "posted_s": round(posted, 2), "worker_rss_mb": [round(rss)]}
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)


def up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--async-runs", type=int, default=400)
    parser.add_argument("--sync-runs", type=int, default=100)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=40,
                        help="runs started and paused before each measurement, on each side")
    parser.add_argument("--direct", action="store_true",
                        help="queue the starts from one process instead of the API, to see "
                             "the workers alone")
    parser.add_argument("--peer", type=Path, metavar="VENV",
                        help='also run the async graph on LangGraph\'s Agent Server from a '
                             'venv holding "langgraph-cli[inmem]", at 10 and 100 jobs per worker')
    parser.add_argument("--cluster", type=Path, metavar="JSON",
                        help="use the running cluster this file describes "
                             "(tests.forgeui.cluster.describe) instead of starting one")
    args = parser.parse_args()
    with running(args.cluster, "forge-concurrency-bench-") as forge:
        results = [measure(forge, "waiting", args.async_runs, args.clients, args.direct,
                           min(args.warmup, args.async_runs)),
                   measure(forge, "waiting_sync", args.sync_runs, args.clients, args.direct,
                           min(args.warmup, args.sync_runs))]
    for kind, result in zip(("async", "sync"), results, strict=True):
        print(f"{kind} nodes: {result['runs']} runs all paused in {result['all_paused_s']} s "
              f"(starts took {result['posted_s']} s); peak in flight {result['peak_in_flight']}"
              f" (per worker {result['peak_per_worker']}); worker RSS MB "
              f"{result['worker_rss_mb']}")
    if args.peer:
        for jobs in (10, 100):
            found = peer(args.peer, args.async_runs, jobs, args.clients,
                         min(args.warmup, args.async_runs))
            print(f"{found['graph']}: {found['runs']} async runs all paused in "
                  f"{found['all_paused_s']} s (starts took {found['posted_s']} s); server RSS "
                  f"MB {found['worker_rss_mb']}")
            results.append(found)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
