"""A production-shaped forge on one machine, for the cluster tests and ``bench/cluster_bench.py``.

``cluster(folder)`` starts a Redis of its own (``redis-server`` on a free port, no
persistence, so restarting it disturbs nobody else), creates a PostgreSQL database migrated
and seeded with the demo users, their API tokens and a reviewer session (a copy of a
template, see ``cluster_database``), then starts two daphne processes and two
``forge_worker`` processes with the production environment
(``DATABASE_URL``, ``REDIS_URL``, ``DEBUG=0``; plain http, without HTTPS redirects or
secure-only cookies). Every process runs in a session of its own and is killed by process
group on the way out, whatever happened. Nothing here imports Django: the test process
reads the database with psycopg.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.forgeui.cluster_database import Database, create_seeded, static_root
from tests.processes import free_port, manage, wait_until

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = {
    "transfer": "forgeui.demo.graphs:transfer",
    "blocking": "tests.forgeui.graphs:blocking",
    "waiting": "tests.forgeui.deployment.waiting_graphs:waiting",
    "waiting_sync": "tests.forgeui.deployment.waiting_graphs:waiting_sync",
    "napping": "tests.forgeui.deployment.waiting_graphs:napping",
    "held": "tests.forgeui.deployment.waiting_graphs:held",
    "lg_async": "tests.forgeui.langgraph.team_graphs:thinking",
}
CAPS = {"napping": 3}  # runs in flight at most, across both workers


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (an rq work horse runs in a group of its own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def kill(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a process, its group and its children's groups: a crashed machine.

    The parent first: an rq worker that outlived its work horse even for a moment would
    take the next job off the queue, a step no crashed machine takes."""
    for pid in [process.pid, *children(process.pid)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def stop(process: subprocess.Popen[Any], grace: float = 5) -> None:
    """SIGTERM the process group, then SIGKILL it and its children after ``grace`` s."""
    horses = children(process.pid)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    for pid in [*horses, process.pid]:  # a forked rq work horse may linger
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


class Redis:
    """``redis-server`` on a free port, without persistence; restartable on that port."""

    def __init__(self, folder: Path, port: int = 0) -> None:
        self.port, self.folder = port or free_port(), folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        with (self.folder / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save",
                 "", "--appendonly", "no", "--dir", str(self.folder)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self.up, 10, "redis-server")

    def up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()


@dataclass
class Cluster:
    folder: Path
    redis: Redis
    db: Database
    env: dict[str, str]
    webs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    cookie: str = ""
    # Few, so a test that counts runs in flight can tell the loop from the pool.
    threads: int = 8

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def manage(self, *args: str, env: dict[str, str] | None = None) -> str:
        return manage(*args, env=env or self.env).stdout

    def api(self, url: str, method: str, path: str, body: Any = None,
            who: str = "supervisor") -> tuple[int, Any]:
        """One JSON API call with a bearer token: (status, body)."""
        request = urllib.request.Request(
            url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.tokens[who]}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()[:2000].decode(errors="replace")

    def start_run(self, url: str, graph: str, data: Any) -> str:
        status, body = self.api(url, "POST", "/api/runs", {"graph": graph, "input": data})
        assert status == 201, (status, body)
        return str(body["run_id"])

    def answer(self, url: str, interrupt_id: str, value: Any) -> None:
        status, body = self.api(url, "POST", f"/api/interrupts/{interrupt_id}/resume",
                                {"value": value}, who="reviewer")
        assert status == 202, (status, body)

    def pending(self, run_ids: list[str]) -> dict[str, str]:
        """Pending interrupt id by run id, for the runs given."""
        return dict(self.db.rows("SELECT run_id, id FROM forgeui_interrupt WHERE status = "
                                 "'pending' AND run_id = ANY(%s)", run_ids))

    def statuses(self, run_ids: list[str]) -> dict[str, str]:
        return dict(self.db.rows("SELECT run_id, status FROM forgeui_run WHERE run_id = "
                                 "ANY(%s)", run_ids))

    def wait_for_status(self, run_ids: list[str], status: str, timeout: float) -> None:
        wait_until(lambda: list(self.statuses(run_ids).values()).count(status) == len(run_ids),
                   timeout, f"{len(run_ids)} runs to be {status}", pause=0.1)

    def start_web(self, index: int) -> None:
        port = self.ports[index]
        with (self.folder / f"daphne-{index}.log").open("ab") as log:
            self.webs[index] = subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                 "forgeui.asgi:application"], cwd=ROOT, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    def start_worker(self, *options: str) -> subprocess.Popen[bytes]:
        """One more ``forge_worker`` with ``threads`` threads; a short grace keeps SIGTERM
        tests quick."""
        with (self.folder / f"worker-{len(self.workers)}.log").open("ab") as log:
            worker = subprocess.Popen(
                [sys.executable, str(ROOT / "manage.py"), "forge_worker", "--grace", "3",
                 "--threads", str(self.threads), *options],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.workers.append(worker)
        return worker

    def web_up(self, index: int) -> bool:
        if self.webs[index].poll() is not None:
            raise AssertionError(f"daphne {index} exited; see {self.folder}/daphne-{index}.log")
        try:
            with urllib.request.urlopen(self.urls[index] + "/healthz", timeout=1):
                return True
        except OSError:
            return False

    def log(self, name: str) -> str:
        return (self.folder / name).read_text(errors="replace")

    def settle(self, workers: int = 2) -> None:
        """Put back what the next test expects, whatever this one left behind (it may have
        stopped half-way): Redis up, nothing queued, ``workers`` live forge_workers, and
        no database connection carried over."""
        self.db.close_connections()
        if self.redis.process is None or not self.redis.up():
            self.redis.stop()
            self.redis.start()
        self.db.rows("DELETE FROM procrastinate_jobs WHERE status = 'todo' RETURNING id")
        alive = sum(worker.poll() is None for worker in self.workers)
        for _ in range(workers - alive):
            self.start_worker()


# The scraper's token: /readyz shows its holder the workers' heartbeats.
METRICS_TOKEN = "cluster-metrics-" + "m" * 24


def environment(database_url: str, redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="forgeui.settings", DATABASE_URL=database_url,
               REDIS_URL=redis_url, DEBUG="0", SECURE_SSL_REDIRECT="0", SECURE_COOKIES="0",
               SECURE_HSTS_SECONDS="0", STATIC_ROOT=str(static_root()),
               SECRET_KEY="forge-cluster-" + "x" * 40,
               ALLOWED_HOSTS="127.0.0.1,localhost", FORGE_GRAPHS=json.dumps(GRAPHS),
               FORGE_GRAPH_CAPS=json.dumps(CAPS), FORGE_WORKER_HEARTBEAT_SECONDS="0.5",
               FORGE_METRICS_TOKEN=METRICS_TOKEN,
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1",
               # CLUSTER_LOG_LEVEL=INFO puts each task's outcome in the worker logs.
               LOG_LEVEL=os.environ.get("CLUSTER_LOG_LEVEL", "WARNING"))
    return env


SESSION = ("from django.conf import settings; from django.contrib.auth.models import User; "
           "from django.test import Client; c = Client(); "
           "c.force_login(User.objects.get(username='reviewer')); "
           "print(c.cookies[settings.SESSION_COOKIE_NAME].value)")


@contextlib.contextmanager
def cluster(folder: Path, webs: int = 2, workers: int = 2,
            threads: int = 8) -> Iterator[Cluster]:
    """Redis, a fresh database, ``webs`` daphne and ``workers`` forge_worker processes of
    ``threads`` threads."""
    redis, db = Redis(folder), Database()
    forge = Cluster(folder, redis, db, environment(db.url, redis.url), threads=threads)
    created = False
    try:
        redis.start()
        made = create_seeded(db, forge.env)
        created = True
        forge.tokens, forge.cookie = made["tokens"], made["cookie"]
        forge.ports = [free_port() for _ in range(webs)]
        forge.webs = [None] * webs  # type: ignore[list-item]
        for index in range(webs):
            forge.start_web(index)
        for _ in range(workers):
            forge.start_worker()
        for index in range(webs):
            wait_until(lambda i=index: forge.web_up(i), 30, f"daphne {index}")  # type: ignore[misc]
        yield forge
    finally:
        with ThreadPoolExecutor() as pool:  # together: each takes its grace to stop
            list(pool.map(stop, [p for p in [*forge.webs, *forge.workers] if p is not None]))
        redis.stop()
        if created:
            db.drop()


def describe(forge: Cluster, path: Path) -> Path:
    """Write to ``path`` what another process needs to use ``forge`` (``attach``)."""
    path.write_text(json.dumps({"folder": str(forge.folder), "redis_port": forge.redis.port,
                                "database": forge.db.name, "ports": forge.ports,
                                "tokens": forge.tokens, "cookie": forge.cookie}))
    return path


def attach(path: Path) -> Cluster:
    """The running cluster another process started and described in ``path``, as its
    clients see it: this process starts and stops none of its processes."""
    found = json.loads(path.read_text())
    redis, db = Redis(Path(found["folder"]), found["redis_port"]), Database(found["database"])
    return Cluster(Path(found["folder"]), redis, db,
                   environment(db.url, redis.url),
                   ports=found["ports"], tokens=found["tokens"], cookie=found["cookie"])


@contextlib.contextmanager
def running(described: Path | None, prefix: str) -> Iterator[Cluster]:
    """The cluster ``described`` names (``attach``), else a new one in a temporary folder
    (``cluster``) whose workers have forge_worker's default threads: how the cluster
    benches start."""
    if described is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as folder, \
                cluster(Path(folder), threads=16) as forge:
            yield forge
        return
    forge = attach(described)
    try:
        yield forge
    finally:
        forge.db.close_connections()
