"""Cluster benchmark: sustained resumes per second through the API.

    python bench/cluster_bench.py [--runs 500] [--clients 20] [--cluster JSON]

Starts the same cluster as ``tests/forgeui/test_cluster.py`` (``tests.forgeui.cluster``):
a Redis of its own, a fresh PostgreSQL database, two daphne and two ``forge_worker``
processes, production settings but plain http. ``--runs`` runs of ``transfer`` are
started through the API and left paused at their interrupt; then ``--clients`` client
threads answer them all through the API, spread over both daphnes, as fast as the API
takes them (or at ``--rate`` answers per second, to see latency below saturation).
Reported:

- sustained resumes/s: runs completed / (last completion - first answer POST sent);
- answer -> completed: the run row's ``updated_at`` as the worker stamped it on
  completion minus the moment its answer POST was sent (one clock: one machine);
- POST round-trip: the answer request's own time (202 once the answer is recorded).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forgeui.cluster import Cluster, running
from tests.processes import wait_until

Sent = tuple[float, float]  # (POST sent at, epoch s; its round-trip, s)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def start_all(forge: Cluster, runs: int, clients: int) -> dict[str, str]:
    """Start ``runs`` runs and wait until each is paused; pending interrupt by run id."""
    with ThreadPoolExecutor(clients) as pool:
        run_ids = list(pool.map(
            lambda n: forge.start_run(forge.urls[n % 2], "transfer", {"n": n}), range(runs)))
    wait_until(lambda: len(forge.pending(run_ids)) == runs, 600, "the runs to pause", 0.5)
    return forge.pending(run_ids)


def answer_all(forge: Cluster, pending: dict[str, str], clients: int,
               rate: float) -> dict[str, Sent]:
    """Answer every interrupt from ``clients`` threads, answer n no sooner than n / ``rate``
    seconds in (0: at once): (sent at, round-trip s) by run."""
    begun = time.perf_counter()

    def answer(item: tuple[int, tuple[str, str]]) -> tuple[str, Sent]:
        n, (run_id, interrupt_id) = item
        if rate:
            time.sleep(max(0.0, begun + n / rate - time.perf_counter()))
        sent, began = time.time(), time.perf_counter()
        forge.answer(forge.urls[n % 2], interrupt_id, {"n": n})
        return run_id, (sent, time.perf_counter() - began)

    with ThreadPoolExecutor(clients) as pool:
        return dict(pool.map(answer, enumerate(pending.items())))


def measure(forge: Cluster, runs: int, clients: int, rate: float) -> dict[str, float]:
    pending = start_all(forge, runs, clients)
    sent = answer_all(forge, pending, clients, rate)
    run_ids = list(sent)
    forge.wait_for_status(run_ids, "completed", 600)
    done = {run_id: at.timestamp() for run_id, at in forge.db.rows(
        "SELECT run_id, updated_at FROM forgeui_run WHERE run_id = ANY(%s)", run_ids)}
    first = min(s for s, _ in sent.values())
    latencies = [(done[r] - sent[r][0]) * 1000 for r in run_ids]
    round_trips = [rt * 1000 for _, rt in sent.values()]
    return {"runs": runs, "clients": clients, "rate": rate,
            "resumes_per_s": runs / (max(done.values()) - first),
            "answer_to_completed_p50_ms": statistics.median(latencies),
            "answer_to_completed_p95_ms": p95(latencies),
            "post_p50_ms": statistics.median(round_trips), "post_p95_ms": p95(round_trips)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rate", type=float, default=0.0,
                        help="answers per second offered (default 0: all at once)")
    parser.add_argument("--cluster", type=Path, metavar="JSON",
                        help="use the running cluster this file describes "
                             "(tests.forgeui.cluster.describe) instead of starting one")
    args = parser.parse_args()
    with running(args.cluster, "forge-cluster-bench-") as forge:
        result = measure(forge, args.runs, args.clients, args.rate)
    offered = f"{args.rate:g}/s" if args.rate else "all at once"
    print(f"{result['runs']} answers ({offered}) from {result['clients']} clients over 2 "
          f"daphne, 2 forge_worker: {result['resumes_per_s']:.1f} resumes/s sustained")
    print(f"answer POST -> run completed (DB): p50 {result['answer_to_completed_p50_ms']:.0f}"
          f" ms, p95 {result['answer_to_completed_p95_ms']:.0f} ms")
    print(f"answer POST round-trip (202): p50 {result['post_p50_ms']:.0f} ms, "
          f"p95 {result['post_p95_ms']:.0f} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
