"""Two daphne and two forge_worker processes on PostgreSQL and Redis: the fault tests.

One cluster (``tests.forgeui.cluster``) serves the whole module: a Redis of its own, a
fresh database, daphne A and B, two workers. Tests talk to it only as clients do: the JSON
API with bearer tokens, inbox websockets with a reviewer's session cookie, and
``manage.py`` commands; they check the outcome in the database.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import deep, missing, require_service
from tests.forgeui.cluster import CAPS, METRICS_TOKEN, ROOT, Cluster, cluster, kill, stop
from tests.forgeui.conftest import lines
from tests.forgeui.watcher import Watcher
from tests.processes import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # Module fixtures run before the per-test service check: check here as well.
    for name in ("postgres", "redis"):
        require_service(name)
    if shutil.which("redis-server") is None:
        missing("redis-server is not installed (the cluster runs a Redis of its own)")
    with cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(autouse=True)
def settled(forge: Cluster) -> Iterator[None]:
    """After each test, passed or not, the cluster is as the next one expects it."""
    yield
    forge.settle()


@pytest.fixture
def watchers(forge: Cluster) -> Iterator[list[Watcher]]:
    """Two inbox sockets on each daphne, connected before the test acts."""
    opened = [Watcher(url, forge.cookie) for url in forge.urls for _ in range(2)]
    for watcher in opened:
        assert watcher.connected.wait(30), "an inbox websocket did not connect"
    yield opened
    for watcher in opened:
        watcher.close()


def test_an_interrupt_reaches_both_daphnes_and_an_answer_through_a_resumes_on_a_worker(
        forge: Cluster, watchers: list[Watcher]) -> None:
    a, b = forge.urls
    run_id = forge.start_run(b, "transfer", {"amount": 7})
    wait_until(lambda: run_id in forge.pending([run_id]), 60, "the run to pause")
    interrupt_id = forge.pending([run_id])[run_id]
    wait_until(lambda: all(w.saw([interrupt_id]) for w in watchers), 30,
               "the row on every socket of both daphnes")

    forge.answer(a, interrupt_id, {"ok": True})
    forge.wait_for_status([run_id], "completed", 60)
    status, run = forge.api(a, "GET", f"/api/runs/{run_id}")
    assert status == 200 and run["output"] == {"input": {"amount": 7}, "approved": {"ok": True},
                                               "done": True}
    # The worker marks the answer applied just after the step it ran commits.
    wait_until(lambda: forge.db.rows("SELECT count(*) FROM forgeui_answer WHERE interrupt_id"
                                     " = %s AND applied_at IS NOT NULL", interrupt_id)[0][0],
               30, "the answer marked applied")
    applied = forge.db.rows("SELECT applied_at, outcome FROM forgeui_answer "
                            "WHERE interrupt_id = %s", interrupt_id)
    assert len(applied) == 1 and applied[0][0] is not None and applied[0][1] == "applied"
    # procrastinate marks the job done just after the task returns.
    wait_until(lambda: forge.db.value("SELECT count(*) FROM procrastinate_jobs WHERE status = "
                                      "'succeeded' AND args->>'path' = %s",
                                      "forgeui.runs.tasks.apply_answer_task") >= 1,
               30, "the answer's job marked succeeded")


# `make test-deep` runs the load the dashboard is built for; `make test` two runs per
# client, enough for every client to race the others over both daphnes and both workers.
RUNS = 500 if deep() else 40
CLIENTS = 20
# Waits grow with the load and leave room for a machine busy with other work.
RUNS_SETTLE_S = 60 + RUNS


@pytest.mark.timeout(300 + 6 * RUNS)
def test_many_runs_answered_from_twenty_clients_complete_exactly_once(
        forge: Cluster, watchers: list[Watcher]) -> None:
    """The load scenario:
    RUNS runs started through the API, all paused, every socket shows every interrupt,
    then all answered from CLIENTS concurrent client threads spread over both daphnes."""
    urls = forge.urls
    with ThreadPoolExecutor(CLIENTS) as clients:
        run_ids = list(clients.map(
            lambda n: forge.start_run(urls[n % 2], "transfer", {"n": n}), range(RUNS)))
    wait_until(lambda: len(forge.pending(run_ids)) == RUNS, RUNS_SETTLE_S,
               f"{RUNS} runs to pause", pause=0.5)
    pending = forge.pending(run_ids)
    wait_until(lambda: all(w.saw(pending.values()) for w in watchers), 60,
               "every socket to show every interrupt")

    with ThreadPoolExecutor(CLIENTS) as clients:
        list(clients.map(lambda n: forge.answer(urls[n % 2], pending[run_ids[n]], {"n": n}),
                         range(RUNS)))
    forge.wait_for_status(run_ids, "completed", RUNS_SETTLE_S)
    # A task marks its answer applied (with the audit row) just after the run completes.
    wait_until(lambda: forge.db.rows(
        "SELECT count(*) FROM forgeui_answer WHERE interrupt_id = ANY(%s) AND applied_at "
        "IS NOT NULL", list(pending.values()))[0][0] == RUNS, 60, "every answer marked applied")

    outputs = dict(forge.db.rows("SELECT run_id, output FROM forgeui_run "
                                 "WHERE run_id = ANY(%s)", run_ids))
    assert all(outputs[r] == {"input": {"n": n}, "approved": {"n": n}, "done": True}
               for n, r in enumerate(run_ids))
    answers = forge.db.rows(
        "SELECT interrupt_id, count(*), count(applied_at), min(outcome), max(outcome) "
        "FROM forgeui_answer WHERE interrupt_id = ANY(%s) GROUP BY interrupt_id",
        list(pending.values()))
    assert len(answers) == RUNS
    assert {row[1:] for row in answers} == {(1, 1, "applied", "applied")}
    applied = forge.db.rows("SELECT object_id, count(*) FROM forgeui_auditentry WHERE "
                            "action = 'answer.applied' AND object_id = ANY(%s) "
                            "GROUP BY object_id", list(pending.values()))
    assert len(applied) == RUNS and {n for _, n in applied} == {1}
    # Each thread: start, paused at "ask", answer taken in, "ask" done, "execute" done.
    checkpoints = forge.db.rows(
        "SELECT count(*), count(*) FILTER (WHERE c.status = 'completed') FROM "
        "forgeui_checkpoint c JOIN forgeui_run r ON r.thread_id = c.thread_id "
        "WHERE r.run_id = ANY(%s) GROUP BY c.thread_id", run_ids)
    assert len(checkpoints) == RUNS and len(set(checkpoints)) == 1, set(checkpoints)
    assert checkpoints[0][1] == 1
    created = forge.db.rows("SELECT interrupt_id, count(*) FROM forgeui_event WHERE kind = "
                            "'interrupt.created' AND interrupt_id = ANY(%s) "
                            "GROUP BY interrupt_id", list(pending.values()))
    assert len(created) == RUNS and {n for _, n in created} == {1}


IN_FLIGHT = 200


# Starts recorded (their audit row committed) whose job is not in the queue: a moment in
# which a crash would leave the start to recovery.
STARTS_WITHOUT_A_JOB = """
SELECT count(*) FROM forgeui_auditentry a WHERE a.action = 'run.start' AND NOT EXISTS (
    SELECT 1 FROM procrastinate_jobs j WHERE j.args -> 'args' ->> 2 = a.detail ->> 'request_id')
"""


def test_two_workers_hold_two_hundred_waiting_runs_at_once(forge: Cluster) -> None:
    """Runs whose node awaits (a model call) hold no worker process: all are in flight.
    Each start's job commits with its audit row: no snapshot sees one without the other."""
    with ThreadPoolExecutor(CLIENTS + 1) as clients:
        starting = clients.map(
            lambda n: forge.start_run(forge.urls[n % 2], "waiting", {"n": n, "seconds": 8}),
            range(IN_FLIGHT))
        watching = clients.submit(lambda: [forge.db.value(STARTS_WITHOUT_A_JOB)
                                           for _ in range(200)])
        run_ids = list(starting)
        orphans = watching.result()
    assert max(orphans) == 0, orphans
    peak = [0]

    def all_paused() -> bool:
        peak[0] = max(peak[0], forge.db.value(
            "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'"))
        return len(forge.pending(run_ids)) == IN_FLIGHT

    wait_until(all_paused, 90, f"{IN_FLIGHT} runs to pause", pause=0.2)
    assert peak[0] >= IN_FLIGHT * 3 // 4, peak[0]


def test_langgraph_runs_with_async_nodes_wait_in_flight_beside_forge_runs(
        forge: Cluster) -> None:
    """A LangGraph graph whose node awaits runs with ``ainvoke`` on the workers' loops,
    side by side with forge's own runs; each answer completes its run once."""
    starts = [("lg_async", {"log": [], "seconds": 3})] * 30 + [("waiting", {"seconds": 3})] * 10
    with ThreadPoolExecutor(CLIENTS) as clients:
        run_ids = list(clients.map(
            lambda n: forge.start_run(forge.urls[n % 2], *starts[n]), range(len(starts))))
    peak = [0]

    def all_paused() -> bool:
        peak[0] = max(peak[0], forge.db.value(
            "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'"))
        return len(forge.pending(run_ids)) == len(run_ids)

    wait_until(all_paused, 60, "every run to pause", pause=0.1)
    assert peak[0] >= len(run_ids) // 2, peak[0]  # on threads (8 a worker): far fewer
    for n, (run_id, interrupt_id) in enumerate(forge.pending(run_ids).items()):
        forge.answer(forge.urls[n % 2], interrupt_id, f"yes {run_id}")
    forge.wait_for_status(run_ids, "completed", 60)
    outputs = dict(forge.db.rows("SELECT run_id, output FROM forgeui_run WHERE graph = "
                                 "'lg_async' AND run_id = ANY(%s)", run_ids))
    assert len(outputs) == 30
    assert all(out["log"] == [f"approved=yes {run_id}", "finished"]
               for run_id, out in outputs.items())


def test_a_capped_graph_never_exceeds_its_cap_and_drops_nothing(forge: Cluster) -> None:
    cap = CAPS["napping"]
    with ThreadPoolExecutor(CLIENTS) as clients:
        run_ids = list(clients.map(
            lambda n: forge.start_run(forge.urls[n % 2], "napping", {"n": n, "seconds": 0.5}),
            range(4 * cap)))
    seen = [0]

    def all_done() -> bool:
        seen[0] = max(seen[0], forge.db.value(
            "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing' AND lock LIKE "
            "'forge-cap:napping:%%'"))
        return list(forge.statuses(run_ids).values()).count("completed") == len(run_ids)

    wait_until(all_done, 60, "every capped run to complete", pause=0.02)
    assert 1 <= seen[0] <= cap


def held_runs(forge: Cluster, folder: Path, count: int) -> tuple[list[str], dict[str, Any]]:
    """``count`` runs of ``held``, answered, so each awaits the gate inside "charge"."""
    files = {"ledger": str(folder / "ledger"), "entered": str(folder / "entered"),
             "gate": str(folder / "gate")}
    with ThreadPoolExecutor(CLIENTS) as clients:
        run_ids = list(clients.map(
            lambda n: forge.start_run(forge.urls[n % 2], "held", {"n": n, **files}),
            range(count)))
    wait_until(lambda: len(forge.pending(run_ids)) == count, 90, "the runs to ask")
    pending = forge.pending(run_ids)
    with ThreadPoolExecutor(CLIENTS) as clients:
        list(clients.map(lambda r: forge.answer(forge.urls[0], pending[r], {"go": r}), run_ids))
    wait_until(lambda: len(lines(Path(files["entered"]))) == count, 90, "every run in charge")
    return run_ids, {**files, "interrupts": list(pending.values())}


def assert_once_each(forge: Cluster, run_ids: list[str], held: dict[str, Any]) -> None:
    """Every run completed with its own answer, charged once; every answer applied once."""
    forge.wait_for_status(run_ids, "completed", 90)
    charged = lines(Path(held["ledger"]))
    assert sorted(charged) == sorted(f"charged {n}" for n in range(len(run_ids)))
    outputs = dict(forge.db.rows("SELECT run_id, output FROM forgeui_run WHERE run_id = "
                                 "ANY(%s)", run_ids))
    assert all(outputs[r]["answer"] == {"go": r} and outputs[r]["done"] for r in run_ids)
    wait_until(lambda: forge.db.value(
        "SELECT count(*) FROM forgeui_answer WHERE interrupt_id = ANY(%s) AND applied_at IS "
        "NOT NULL", held["interrupts"]) == len(run_ids), 60, "every answer marked applied")
    audits = forge.db.rows("SELECT object_id, count(*) FROM forgeui_auditentry WHERE action = "
                           "'answer.applied' AND object_id = ANY(%s) GROUP BY object_id",
                           held["interrupts"])
    assert {n for _, n in audits} <= {1}


def test_a_worker_killed_holding_fifty_runs_loses_nothing_and_recovery_finishes_them(
        forge: Cluster, tmp_path: Path) -> None:
    run_ids, held = held_runs(forge, tmp_path, 100)
    # An earlier test may have stopped workers that settle() replaced: kill a live one.
    victim = next(worker for worker in forge.workers if worker.poll() is None)
    kill(victim)  # a crashed machine, with its runs inside "charge"
    assert victim.wait(10) == -signal.SIGKILL
    Path(held["gate"]).touch()
    # The survivor finishes its own runs; the victim's stay running until recovered.
    wait_until(lambda: "interrupted" not in forge.statuses(run_ids).values() and
               len(forge.db.rows("SELECT 1 FROM procrastinate_jobs WHERE status = 'doing' "
                                 "AND worker_id IS NOT NULL AND worker_id IN (SELECT id FROM "
                                 "procrastinate_workers WHERE last_heartbeat > now() - "
                                 "interval '10 seconds')")) == 0, 90, "the survivor to finish")
    left = [r for r, status in forge.statuses(run_ids).items() if status == "running"]
    assert len(left) >= 20, f"the victim held {len(left)} runs"
    # Its heartbeat stopped (six beats of 0.5 s): recover_runs finds its jobs and their
    # runs, though they saved too recently for --older-than to take them over.
    time.sleep(3.5)
    out = forge.manage("recover_runs", "--older-than", "600")
    assert out.count("retry job") == len(left), out
    assert out.count("recover thread") == len(left), out
    assert_once_each(forge, run_ids, held)
    entered = lines(Path(held["entered"]))
    assert len(entered) == len(run_ids) + len(left)  # the victim's runs entered again


def test_sigterm_mid_node_leaves_the_runs_to_recovery_and_says_which(
        forge: Cluster, tmp_path: Path) -> None:
    run_ids, held = held_runs(forge, tmp_path, 10)
    alive = [worker for worker in forge.workers if worker.poll() is None]
    # Both beat (every 0.5 s): each has its signal handlers, even one started just now.
    wait_until(lambda: forge.db.value("SELECT count(*) FROM procrastinate_workers WHERE "
                                      "last_heartbeat > now() - interval '1 second'")
               >= len(alive), 30, "both workers to beat")
    for worker in alive:
        worker.send_signal(signal.SIGTERM)
    for worker in alive:  # the grace (3 s) runs out: the node never ends
        assert worker.wait(30) == 0
    logs = "".join(forge.log(f"worker-{n}.log") for n in range(len(forge.workers)))
    assert logs.count("left to recovery: forgeui.runs.tasks.apply_answer_task") == 10, logs
    assert sorted(forge.statuses(run_ids).values()) == ["running"] * 10
    forge.settle()
    Path(held["gate"]).touch()
    out = forge.manage("recover_runs", "--older-than", "0")
    assert out.count("recover thread") == 10, out
    assert_once_each(forge, run_ids, held)


def test_what_is_accepted_while_redis_is_down_goes_on_at_once(forge: Cluster) -> None:
    """The queue is in PostgreSQL: with Redis down the API still answers 201 and 202 and
    the workers begin the start, apply the answer and the steering note, and cancel the
    run they were asked to, without ``recover_runs``."""
    paused, steered, doomed = (forge.start_run(forge.urls[0], "transfer", {"amount": n})
                               for n in (3, 5, 6))
    wait_until(lambda: len(forge.pending([paused, steered, doomed])) == 3, 90,
               "the runs to pause")
    interrupt_id = forge.pending([paused])[paused]
    # Open inboxes get the late start's row: a socket whose first read meets a connection
    # the outage closed is closed, and comes back from its last event id as forge.js does.
    watchers = [Watcher(url, forge.cookie, reconnect=True) for url in forge.urls]
    for watcher in watchers:
        assert watcher.connected.wait(30)
    forge.redis.stop()
    try:
        queued = forge.start_run(forge.urls[1], "transfer", {"amount": 4})
        forge.answer(forge.urls[0], interrupt_id, {"ok": True})
        status, note = forge.api(forge.urls[0], "POST", "/api/steering",
                                 {"run_id": steered, "text": "keep it under budget"})
        assert status == 201, note
        status, body = forge.api(forge.urls[1], "POST", f"/api/runs/{doomed}/cancel")
        assert status == 202, body
    finally:
        forge.redis.start()

    try:
        forge.wait_for_status([paused], "completed", 90)
        forge.wait_for_status([doomed], "cancelled", 90)
        wait_until(lambda: forge.db.rows("SELECT outcome FROM forgeui_steeringnote WHERE "
                                         "run_id = %s", steered) == [("applied",)], 60,
                   "the note to be applied")
        assert forge.statuses([steered]) == {steered: "interrupted"}
        wait_until(lambda: queued in forge.pending([queued]), 90, "the late start to pause")
        assert forge.statuses([queued]) == {queued: "interrupted"}
        late = forge.pending([queued])[queued]
        wait_until(lambda: all(w.saw([late]) for w in watchers), 60, "the late start's row")
    finally:
        for watcher in watchers:
            watcher.close()


def test_redis_restarted_under_connected_sockets_misses_no_interrupt(
        forge: Cluster) -> None:
    watchers = [Watcher(url, forge.cookie, reconnect=True) for url in forge.urls
                for _ in range(2)]
    try:
        for watcher in watchers:
            assert watcher.connected.wait(30)
        forge.redis.stop()
        # Interrupts created while Redis is down: written by a process of its own (the
        # embedded task backend, same database), announced to no channel layer.
        embedded = {k: v for k, v in forge.env.items() if k != "REDIS_URL"}
        out = forge.manage("shell", "-c", OUTAGE_RUNS, env=embedded)
        outage = out.split()[-3:]
        during = forge.pending(outage)
        assert len(during) == 3, out
        time.sleep(1)
        forge.redis.start()

        wait_until(lambda: all(w.saw(during.values()) for w in watchers), 60,
                   "every socket to catch up on the outage's interrupts")
        # The Redis layer's receive failed under each socket and daphne closed it; the
        # client came back (as forge.js does) with its last event id.
        assert all(w.connects >= 2 for w in watchers), [w.connects for w in watchers]
        # And the live path works again: a run through the API, on a worker.
        run_id = forge.start_run(forge.urls[0], "transfer", {"after": "outage"})
        wait_until(lambda: run_id in forge.pending([run_id]), 90, "a run after the restart")
        after = forge.pending([run_id])[run_id]
        wait_until(lambda: all(w.saw([after]) for w in watchers), 60, "the live row")
    finally:
        for watcher in watchers:
            watcher.close()


OUTAGE_RUNS = (
    "from forgeui.runs import services; from forgeui.runs.backends import wait_for_tasks; "
    "runs = [services.start_run(None, 'transfer', {'outage': n}).run_id for n in range(3)]; "
    "wait_for_tasks(); print(*runs)"
)


# Several times redis-py 8's default read timeout of 5 s; the deep run idles longer.
IDLE_SECONDS = 30 if deep() else 15


def test_idle_inbox_sockets_workers_and_sweeper_survive_redis_client_timeouts(
        forge: Cluster) -> None:
    """Nothing happens for IDLE_SECONDS: the channel layer's blocking reads, the idle
    forge_workers and a sweeper loop must all still work afterwards, with the client defaults
    of the redis version in constraints.txt."""
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text()
                .splitlines() if "==" in line)
    for package in ("redis", "channels_redis", "rq", "django-rq"):
        assert metadata.version(package) == pins[package], f"{package} is not the pinned one"
    env = {**forge.env, "FORGE_SWEEP_SECONDS": "1"}
    with (forge.folder / "sweeper.log").open("ab") as log:
        sweeper = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "expire_interrupts", "--loop"], cwd=ROOT,
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    watchers = [Watcher(url, forge.cookie) for url in forge.urls]
    try:
        for watcher in watchers:
            assert watcher.connected.wait(30)
        time.sleep(IDLE_SECONDS)
        assert all(w.connected.is_set() and w.connects == 1 for w in watchers), \
            "an idle inbox socket closed: " + forge.log("daphne-0.log")[-2000:]

        run_id = forge.start_run(forge.urls[0], "transfer", {"idle": IDLE_SECONDS})
        wait_until(lambda: run_id in forge.pending([run_id]), 90, "an idle worker to run it")
        interrupt_id = forge.pending([run_id])[run_id]
        wait_until(lambda: all(w.saw([interrupt_id]) for w in watchers), 30,
                   "the new row on the sockets that were idle")
        for url in forge.urls:
            asked = urllib.request.Request(
                url + "/readyz", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
            with urllib.request.urlopen(asked, timeout=10) as response:
                ready = json.loads(response.read())
            assert ready["checks"] == {"database": "ok", "redis": "ok", "graphs": "ok"}
            # Each live worker beat within its heartbeat interval, however idle.
            beating = [w for w in ready["workers"] if w["seconds_ago"] < 10]
            assert len(beating) >= 2, ready["workers"]
        assert sweeper.poll() is None, forge.log("sweeper.log")[-2000:]
        assert "Traceback" not in forge.log("sweeper.log"), forge.log("sweeper.log")[-2000:]
        for log_name in ("daphne-0.log", "daphne-1.log", "worker-0.log", "worker-1.log"):
            assert "TimeoutError" not in forge.log(log_name), forge.log(log_name)[-2000:]
    finally:
        for watcher in watchers:
            watcher.close()
        stop(sweeper)
