"""Cluster benchmark: resumes per second through the API and the workers, beside one process.

    python bench/cluster_bench.py [--runs 500] [--clients 20] [--rate 50] [--cluster JSON]

Starts the same cluster as ``tests/forgeui/deployment/test_cluster.py``
(``tests.forgeui.cluster``: a Redis of its own, a fresh PostgreSQL database, two daphne and
two ``forge_worker`` processes on the production settings over plain http) unless
``--cluster`` names a running one. Each phase starts ``--runs`` runs of ``transfer``
through the API, waits until each is paused at its interrupt, then answers them all:

- all at once: ``--clients`` client threads answer through the API, over both daphnes, as
  fast as it takes them; sustained resumes/s = runs completed / (last completion - first
  answer sent);
- at ``--rate`` answers per second: the same, each answer sent no sooner than its turn;
  answer -> completed is the run row's ``updated_at`` as the worker stamped it on
  completion minus the moment its answer POST was sent (one clock: one machine);
- drained (not with ``--cluster``): the workers are stopped, every answer is recorded
  through the API, then two new workers take the queue; resumes/s = runs completed /
  (last completion - first job started): what the workers alone sustain;
- one process: the same graph on the same store and database, ``resume_sync`` called in
  a loop in one ``manage.py shell``, no API and no queue: the peer of the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forgeui.cluster import Cluster, running, stop
from tests.processes import wait_until

Sent = tuple[float, float]  # (POST sent at, epoch s; its round-trip, s)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


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


def completed_at(forge: Cluster, run_ids: list[str]) -> dict[str, float]:
    forge.wait_for_status(run_ids, "completed", 600)
    return {run_id: at.timestamp() for run_id, at in forge.db.rows(
        "SELECT run_id, updated_at FROM forgeui_run WHERE run_id = ANY(%s)", run_ids)}


def through_api(forge: Cluster, runs: int, clients: int, rate: float) -> dict[str, Any]:
    """Answers through the API while the workers run."""
    sent = answer_all(forge, start_all(forge, runs, clients), clients, rate)
    done = completed_at(forge, list(sent))
    latencies = [(done[r] - at) * 1000 for r, (at, _) in sent.items()]
    round_trips = [rt * 1000 for _, rt in sent.values()]
    return {"phase": f"{rate:g}/s" if rate else "all at once", "runs": runs,
            "resumes_per_s": runs / (max(done.values()) - min(s for s, _ in sent.values())),
            "answer_to_completed_p50_ms": statistics.median(latencies),
            "answer_to_completed_p95_ms": p95(latencies),
            "post_p50_ms": statistics.median(round_trips), "post_p95_ms": p95(round_trips)}


def drained(forge: Cluster, runs: int, clients: int) -> dict[str, Any]:
    """Every answer recorded while no worker runs, then two workers drain the queue."""
    pending = start_all(forge, runs, clients)
    workers, forge.workers = forge.workers, []
    with ThreadPoolExecutor() as pool:
        list(pool.map(stop, workers))
    sent = answer_all(forge, pending, clients, 0)
    released = time.time()
    for _ in workers:
        forge.start_worker()
    done = completed_at(forge, list(sent))
    first = forge.db.value("SELECT min(at) FROM procrastinate_events WHERE type = 'started' "
                           "AND at >= to_timestamp(%s)", released).timestamp()
    return {"phase": "drained", "runs": runs,
            "resumes_per_s": runs / (max(done.values()) - first)}


# The peer: the same graph on the same store, in one process, with nothing between.
ONE_PROCESS = """
import json, time
from forgeui.runs import registry
ex = registry.get_executor("transfer")
paused = [ex.run_sync({{"n": n}}) for n in range({runs})]
begun = time.perf_counter()
done = [ex.resume_sync(r.thread_id, {{"n": n}}) for n, r in enumerate(paused)]
took = time.perf_counter() - begun
assert all(d.status == "completed" for d in done), [d.status for d in done]
print(json.dumps({{"phase": "one process", "runs": {runs}, "resumes_per_s": {runs} / took}}))
"""


def one_process(forge: Cluster, runs: int) -> dict[str, Any]:
    out = forge.manage("shell", "-c", ONE_PROCESS.format(runs=runs))
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500, help="runs per phase")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rate", type=float, default=50.0,
                        help="answers per second offered in the paced phase")
    parser.add_argument("--cluster", type=Path, metavar="JSON",
                        help="use the running cluster this file describes "
                             "(tests.forgeui.cluster.describe) instead of starting one; "
                             "its workers are not stopped, so there is no drained phase")
    args = parser.parse_args()
    with running(args.cluster, "forge-cluster-bench-") as forge:
        results = [through_api(forge, args.runs, args.clients, 0),
                   through_api(forge, args.runs, args.clients, args.rate)]
        if args.cluster is None:
            results.append(drained(forge, args.runs, args.clients))
        peer = one_process(forge, args.runs)
    for result in results:
        line = (f"{result['runs']} answers, {result['phase']}, 2 daphne and 2 forge_worker: "
                f"{result['resumes_per_s']:.1f} resumes/s sustained, "
                f"{result['resumes_per_s'] / peer['resumes_per_s']:.2f}x one process")
        if "post_p50_ms" in result:
            line += (f"; answer POST -> run completed p50 "
                     f"{result['answer_to_completed_p50_ms']:.0f} ms, p95 "
                     f"{result['answer_to_completed_p95_ms']:.0f} ms; POST round trip p50 "
                     f"{result['post_p50_ms']:.0f} ms, p95 {result['post_p95_ms']:.0f} ms")
        print(line)
    print(f"one process, same store and database: {peer['resumes_per_s']:.1f} resumes/s")
    print(json.dumps([*results, peer]))


if __name__ == "__main__":
    main()
