"""Concurrency benchmark: how many waiting runs two workers hold at once.

    python bench/concurrency_bench.py [--async-runs 400] [--sync-runs 100] [--cluster JSON]

Starts the cluster of ``tests/forgeui/deployment/test_cluster.py`` (``tests.forgeui.cluster``:
two daphne and two ``forge_worker`` processes, PostgreSQL, Redis) unless ``--cluster``
names a running one. For each kind of node, N runs of a graph whose first node waits 1 s
(``waiting``: ``await asyncio.sleep(1)``, an async model call; ``waiting_sync``:
``time.sleep(1)``, a sync one) and then pauses are started through the API from
``--clients`` threads over both daphnes (``--direct``: queued from one process, past the
API). Reported per kind: seconds from the first start until every run is paused, the
most jobs in flight at once (per worker and in all, sampled from the queue), and each
worker's resident memory afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forgeui.cluster import Cluster, running, wait_until


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


def measure(forge: Cluster, graph: str, runs: int, clients: int,
            direct: bool) -> dict[str, object]:
    peak: dict[int, int] = {}
    total = [0]
    if direct:
        run_ids, first, last = start_direct(forge, graph, runs, clients)
        begun = time.perf_counter() - (time.time() - first)
        posted = last - first
    else:
        begun = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            run_ids = list(pool.map(
                lambda n: forge.start_run(forge.urls[n % 2], graph, {"n": n}), range(runs)))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--async-runs", type=int, default=400)
    parser.add_argument("--sync-runs", type=int, default=100)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--direct", action="store_true",
                        help="queue the starts from one process instead of the API, to see "
                             "the workers alone")
    parser.add_argument("--cluster", type=Path, metavar="JSON",
                        help="use the running cluster this file describes "
                             "(tests.forgeui.cluster.describe) instead of starting one")
    args = parser.parse_args()
    with running(args.cluster, "forge-concurrency-bench-") as forge:
        results = [measure(forge, "waiting", args.async_runs, args.clients, args.direct),
                   measure(forge, "waiting_sync", args.sync_runs, args.clients, args.direct)]
    for kind, result in zip(("async", "sync"), results, strict=True):
        print(f"{kind} nodes: {result['runs']} runs all paused in {result['all_paused_s']} s "
              f"(starts took {result['posted_s']} s); peak in flight {result['peak_in_flight']}"
              f" (per worker {result['peak_per_worker']}); worker RSS MB "
              f"{result['worker_rss_mb']}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
