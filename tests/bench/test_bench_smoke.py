"""Every script in bench/ runs at a tiny size, so none rots between real measurements.

Each run is a subprocess, as a person would start it: it must exit 0 and print its
figures. The sizes prove that the script works end to end, not that a target is met.
The cluster benches share one cluster the module starts (``--cluster``) with the very
code they start their own with.
A new script fails ``test_every_bench_script_has_a_smoke_run`` until it gets a line here;
one too slow for ``make test`` even when tiny runs in ``make test-deep`` only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.conftest import deep, missing
from tests.forgeui.cluster import cluster, describe
from tests.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
HELPERS = {"callgrind.py"}  # imported by the scripts that count instructions; no main
POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]
    prints: str  # a pattern the output must contain: the script's figures
    tools: tuple[str, ...] = ()  # programs it starts besides Python
    marks: tuple[str, ...] = ()  # services it talks to; "slow" for the cluster benches
    deep_only: bool = False  # too slow for make test even when tiny: make test-deep runs it
    cluster: bool = False  # runs in the module's one cluster (``--cluster``), not its own


CLUSTER = {"tools": ("redis-server",), "marks": ("postgres", "redis", "slow"), "cluster": True}
SMOKES = {
    "audit_chain.py": Smoke(("--entries", "300", "--appends", "10"),
                            r"postgres: append adds -?[\d.]+ ms .* verify 300 entries",
                            marks=("postgres",)),
    "concurrency_bench.py": Smoke(("--async-runs", "4", "--sync-runs", "2", "--clients", "2"),
                                  r"async nodes: 4 runs all paused in [\d.]+ s(.|\n)*"
                                  r"sync nodes: 2 runs", **CLUSTER),
    "cluster_bench.py": Smoke(("--runs", "4", "--clients", "2"),
                              r"4 answers, .* [\d.]+ resumes/s sustained", **CLUSTER),
    "inbox_bench.py": Smoke(("--pending", "60", "--clients", "2", "--interrupts", "3",
                             "--renders", "3", "--port", "{port}"), r"delivered 6/6"),
    "langgraph_saver.py": Smoke(("--checkpoints", "5", "--turns", "4", "--window", "1"),
                                r"targets\n  (PASS|FAIL)  put/get", marks=("postgres",)),
    "long_thread.py": Smoke(("--turns", "3", "--budget", "60"), r"targets\n  ",
                            marks=("postgres",)),
    "policy_bench.py": Smoke(("--answers", "4", "--rounds", "2"),
                             r"policy check adds -?[\d.]+ ms to an answer"),
    "requests_bench.py": Smoke(("--agents", "4", "--clients", "2", "--requests", "3",
                                "--port", "{port}"), r"4 held, 4 saw their decision"),
    "slack_bench.py": Smoke(("--interrupts", "3"),
                            r"press → resumed +p50 +[\d.]+ ms +p95 +[\d.]+ ms"),
    "runtime_vs_langgraph.py": Smoke(("--threads", "5", "--forks", "2", "--cycles", "3"),
                                     r"checkpoints per finished run: forge \d"),
    "store_instructions.py": Smoke(("--runs", "1", "--store", "memory"),
                                   r"per resume +[\d.]+ M", tools=("valgrind",)),
    "store_vs_langgraph.py": Smoke(("--threads", "5", "--rounds", "1"),
                                   r"postgres: 5 threads(.|\n)*B resumes/s +[\d,]+",
                                   marks=("postgres",)),
    "task_path.py": Smoke(("--db", "postgres", "--threads", "3", "--rounds", "1"),
                          r"before / now: A [\d.]+x, B [\d.]+x", marks=("postgres",)),
    "tree_resume.py": Smoke(("--store", "sqlite", "--children", "2", "--asks", "3"),
                            r"6 answers to 2 sub-agents, status completed"),
    # LangGraph imported under callgrind: about a minute at any size.
    "turn_instructions.py": Smoke(("--turns", "2", "--window", "1"),
                                  r"forge's last turns / LangGraph plain's: [\d.]+x",
                                  tools=("valgrind",), deep_only=True),
    "turn_statements.py": Smoke(("--warm", "2", "--turns", "2"),
                                r"postgres +[\d.]+ / [\d.]+ +[\d.]+ / [\d.]+", marks=("postgres",)),
    "ws_load.py": Smoke(("--clients", "4", "--idle", "1", "--interrupts", "3",
                         "--p95-limit", "60000"), r"\nPASS", **CLUSTER),
}


def scripts() -> list[str]:
    return sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPERS)


def test_every_bench_script_has_a_smoke_run() -> None:
    assert scripts() == sorted(SMOKES)


@pytest.fixture
def bench_db() -> Iterator[str]:
    """A PostgreSQL database name of this run's own, dropped afterwards if a bench made it."""
    name = f"forge_bench_smoke_{uuid.uuid4().hex[:8]}"
    yield name
    try:
        with psycopg.connect(POSTGRES, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.OperationalError:
        pass  # PostgreSQL is down: the test itself said so


@pytest.fixture(scope="module")
def bench_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One started cluster for the cluster benches, described for their ``--cluster``:
    each bench's own start would cost as much as its tiny run."""
    folder = tmp_path_factory.mktemp("bench-cluster")
    with cluster(folder) as forge:
        yield describe(forge, folder / "cluster.json")


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("script", [
    pytest.param(name, marks=[getattr(pytest.mark, m) for m in smoke.marks])
    for name, smoke in sorted(SMOKES.items()) if deep() or not smoke.deep_only])
def test_the_bench_script_runs_at_a_tiny_size(script: str, bench_db: str, tmp_path: Path,
                                              request: pytest.FixtureRequest) -> None:
    smoke = SMOKES[script]
    for tool in smoke.tools:
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed ({script} needs it)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGE_BENCH_DB": bench_db,
           "PYTHONUNBUFFERED": "1"}
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)  # the script sets up its own, as from a shell
    args = [a.replace("{port}", str(free_port())) for a in smoke.args]
    if smoke.cluster:
        args += ["--cluster", str(request.getfixturevalue("bench_cluster"))]
    code, out, err = run([sys.executable, str(BENCH / script), *args], tmp_path, env,
                         timeout=1200 if smoke.deep_only else 480)
    assert code == 0, f"{script} exited {code}:\n{(out + err)[-4000:]}"
    assert re.search(smoke.prints, out), f"{script} printed:\n{out[-4000:]}"
    assert not re.search(r"failed: |timed out|out of memory", out), out


def run(command: list[str], cwd: Path, env: dict[str, str],
        timeout: float = 480) -> tuple[int, str, str]:
    """Run ``command`` in a session of its own; on a timeout kill the whole session (the
    benches start servers, workers and valgrind), so nothing outlives the test."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:  # the timeout, or pytest-timeout's signal
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return process.returncode, out, err
