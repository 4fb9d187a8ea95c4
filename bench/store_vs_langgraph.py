"""Durable-store benchmark: ``DjangoCheckpointStore`` vs LangGraph's SQL savers.

The workload of ``runtime_vs_langgraph.py`` (phases A: start to the interrupt, B: resume
to the end), on SQLite (WAL, synchronous=FULL) and on PostgreSQL, beside LangGraph's
``SqliteSaver`` / ``PostgresSaver`` and beside the raw limit: single-row
insert-and-commit rate of the same database. Every completed step is checkpointed
(``durability="sync"``), so crash safety is not traded for speed. Each side's
checkpoints and commits per finished run are counted too (``commits_per_run``), and
how many of those commits did not wait for the disk (statements that lower the wait).

Each side runs twice, sync API against sync API and async against async: forge's
``ex.run_sync`` / ``ex.resume_sync`` (lone sync steps on the caller's thread, no event
loop) against LangGraph's ``graph.invoke`` on ``SqliteSaver`` / ``PostgresSaver``, and
``await ex.run`` / ``await ex.resume`` against ``await graph.ainvoke`` on
``AsyncSqliteSaver`` / ``AsyncPostgresSaver``.

Run: ``.venv/bin/python bench/store_vs_langgraph.py [--threads 300]``. The sides take
turns (``--rounds``, 5 by default), so load from anything else on the machine falls on
all of them. ``--profile sqlite`` (or ``postgres``) runs only forge's phases
under cProfile and prints the top functions. Each database runs in its own subprocess
(Django settings are per process); PostgreSQL uses the database ``forge_bench`` on
127.0.0.1 (``FORGE_BENCH_DB`` names another), created fresh.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
# Another name lets two runs share the server (the test suite's smoke run sets one).
BENCH_DB = os.environ.get("FORGE_BENCH_DB", "forge_bench")
PG_BENCH = f"postgresql://postgres@127.0.0.1:5432/{BENCH_DB}"


def raw_commit_rate(kind: str, target: str, n: int = 2000) -> float:
    """Single-row INSERT + COMMIT per row: the ceiling for one-commit-per-step stores."""
    if kind == "sqlite":
        conn = sqlite3.connect(target, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, v TEXT)")
        start = time.perf_counter()
        for i in range(n):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO raw (v) VALUES (?)", (str(i),))
            conn.execute("COMMIT")
        return n / (time.perf_counter() - start)
    import psycopg

    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS raw (id serial PRIMARY KEY, v text)")
        start = time.perf_counter()
        for i in range(n):
            conn.execute("INSERT INTO raw (v) VALUES (%s)", (str(i),))
        return n / (time.perf_counter() - start)


Phases = Callable[[int, str], tuple[float, float, int]]
# Installs a callback that sees every statement the side sends (None removes it); None
# where a side's statements cannot be watched (LangGraph's PostgreSQL savers).
Trace = Callable[[Callable[[str], None] | None], None] | None


def forge_runner() -> tuple[Phases, Phases, Trace]:
    """Runs ``n`` starts then ``n`` resumes on the Django store: (A secs, B secs, saved),
    through the async API (``await ex.run``) and through its sync twins (``ex.run_sync``,
    which run lone sync steps on the caller's thread with no event loop, as LangGraph's
    ``invoke`` does)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    # DEBUG (the settings' default) logs every statement with its parameters; deployments
    # run with DEBUG=0, so measure that (the rest of the production switch is HTTP-only).
    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    from runtime_vs_langgraph import forge_executor

    from forgeui.store import DjangoCheckpointStore

    ex = forge_executor(DjangoCheckpointStore())

    async def phases(n: int) -> tuple[float, float, int]:
        t0 = time.perf_counter()
        paused = [await ex.run({"amount": i}) for i in range(n)]
        a = time.perf_counter() - t0
        t0 = time.perf_counter()
        done = [await ex.resume(r.thread_id, "yes") for r in paused]
        b = time.perf_counter() - t0
        assert all(d.output["done"] and d.output["answer"] == "yes" for d in done)
        saved = len(await ex.store.list(paused[0].thread_id))  # type: ignore[union-attr]
        return a, b, saved

    def sync_phases(n: int, _tag: str) -> tuple[float, float, int]:
        t0 = time.perf_counter()
        paused = [ex.run_sync({"amount": i}) for i in range(n)]
        a = time.perf_counter() - t0
        t0 = time.perf_counter()
        done = [ex.resume_sync(r.thread_id, "yes") for r in paused]
        b = time.perf_counter() - t0
        assert all(d.output["done"] and d.output["answer"] == "yes" for d in done)
        return a, b, len(ex.store.list_sync(paused[0].thread_id))  # type: ignore[union-attr]

    def trace(callback: Callable[[str], None] | None) -> None:
        from django.db import connection

        def watch(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            assert callback is not None
            callback(sql)
            return execute(sql, params, many, context)

        def install() -> None:  # on a thread whose connection saves
            connection.ensure_connection()
            if connection.vendor == "sqlite":
                connection.connection.set_trace_callback(callback)
                return
            # PostgreSQL: the store's statements all pass the execute wrappers.
            connection.execute_wrappers[:] = [
                w for w in connection.execute_wrappers if not getattr(w, "bench", False)]
            if callback is not None:
                watch.bench = True  # type: ignore[attr-defined]
                connection.execute_wrappers.append(watch)

        install()  # this thread's: the sync twins save on it
        asyncio.run(ex.store.call_in_store_thread(install))  # type: ignore[union-attr]

    return (lambda n, _tag: asyncio.run(phases(n))), sync_phases, trace


def langgraph_runner(kind: str, target: str, stack: ExitStack) -> tuple[Phases, Trace]:
    from langgraph.types import Command
    from runtime_vs_langgraph import langgraph_graph

    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(target, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        saver: Any = SqliteSaver(conn)
        trace: Trace = conn.set_trace_callback
    else:
        trace = None
        from langgraph.checkpoint.postgres import PostgresSaver

        saver = stack.enter_context(PostgresSaver.from_conn_string(target))
        saver.setup()
    graph = langgraph_graph(saver)

    def phases(n: int, tag: str) -> tuple[float, float, int]:
        cfg = [{"configurable": {"thread_id": f"lg{tag}-{i}"}} for i in range(n)]
        t0 = time.perf_counter()
        for i in range(n):
            graph.invoke({"amount": i}, cfg[i])
        a = time.perf_counter() - t0
        t0 = time.perf_counter()
        results = [graph.invoke(Command(resume="yes"), c) for c in cfg]
        b = time.perf_counter() - t0
        assert all(r["done"] and r["answer"] == "yes" for r in results)
        return a, b, len(list(graph.get_state_history(cfg[0])))

    return phases, trace


def langgraph_async_runner(kind: str, target: str, stack: ExitStack) -> tuple[Phases, Trace]:
    """LangGraph's async API (``await graph.ainvoke``) on its async savers, the peer of
    forge's async API: ``AsyncSqliteSaver`` (aiosqlite) and ``AsyncPostgresSaver``."""
    from langgraph.types import Command
    from runtime_vs_langgraph import langgraph_graph

    loop = asyncio.new_event_loop()  # the savers bind to the loop they were made on
    stack.callback(loop.close)
    opened = AsyncExitStack()
    stack.callback(lambda: loop.run_until_complete(opened.aclose()))
    trace: Trace = None
    if kind == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async def saver_of() -> Any:
            conn = await opened.enter_async_context(aiosqlite.connect(target))
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=FULL")
            return AsyncSqliteSaver(conn)

        saver = loop.run_until_complete(saver_of())
        trace = lambda callback: loop.run_until_complete(  # noqa: E731
            saver.conn.set_trace_callback(callback))
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async def saver_of() -> Any:
            made = await opened.enter_async_context(AsyncPostgresSaver.from_conn_string(target))
            await made.setup()
            return made

        saver = loop.run_until_complete(saver_of())
    graph = langgraph_graph(saver)

    async def phases(n: int, tag: str) -> tuple[float, float, int]:
        cfg = [{"configurable": {"thread_id": f"lga{tag}-{i}"}} for i in range(n)]
        t0 = time.perf_counter()
        for i in range(n):
            await graph.ainvoke({"amount": i}, cfg[i])
        a = time.perf_counter() - t0
        t0 = time.perf_counter()
        results = [await graph.ainvoke(Command(resume="yes"), c) for c in cfg]
        b = time.perf_counter() - t0
        assert all(r["done"] and r["answer"] == "yes" for r in results)
        return a, b, len([s async for s in graph.aget_state_history(cfg[0])])

    return (lambda n, tag: loop.run_until_complete(phases(n, tag))), trace


def unwaited(sql: str) -> bool:
    """Does this statement make a commit skip waiting for the disk?
    SQLite: ``synchronous`` lowered to NORMAL (0 or 1) for it; PostgreSQL:
    ``synchronous_commit`` turned off for it."""
    text = sql.replace(" ", "").lower()
    return text in ("pragmasynchronous=0", "pragmasynchronous=1") or (
        "synchronous_commit" in text and "off" in text)


def commits_per_run(kind: str, phases: Phases, trace: Trace,
                    n: int = 20) -> tuple[float, float | None]:
    """Commits that wrote, and how many of them did not wait for the disk, per run (start
    plus resume), counted on a pass of its own so the counting costs the timed rounds
    nothing. SQLite: ``COMMIT`` statements seen by the connection's trace callback.
    PostgreSQL: transaction ids drawn (only a transaction that writes draws one; the two
    readings draw one each). Unwaited: statements that lower the wait (``unwaited``),
    where the side's statements can be watched (else None)."""
    commits, lowered = [0], [0]

    def seen(sql: str) -> None:
        if sql.lstrip().upper().startswith("COMMIT"):
            commits[0] += 1
        elif unwaited(sql):
            lowered[0] += 1

    if trace is not None:
        trace(seen)
    try:
        if kind == "sqlite":
            phases(n, "commits")
        else:
            import psycopg

            with psycopg.connect(PG_BENCH, autocommit=True) as conn:
                before = conn.execute("SELECT txid_current()").fetchone()[0]  # type: ignore[index]
                phases(n, "commits")
                after = conn.execute("SELECT txid_current()").fetchone()[0]  # type: ignore[index]
            commits[0] = after - before - 1
    finally:
        if trace is not None:
            trace(None)
    return commits[0] / n, None if trace is None else lowered[0] / n


def alternate(sides: dict[str, Phases], n: int, rounds: int) -> dict[str, dict[str, Any]]:
    """Each side runs ``n`` threads in ``rounds`` turns, taking turns, so both meet the
    same load from anything else on the machine; rates are over the summed times."""
    totals = {name: [0.0, 0.0, 0] for name in sides}
    per_round = [n // rounds + (r < n % rounds) for r in range(rounds)]
    for r, size in enumerate(per_round):
        for name, phases in sides.items():
            a, b, saved = phases(size, str(r))
            totals[name][0] += a
            totals[name][1] += b
            totals[name][2] = saved
    return {name: {"A": n / a, "B": n / b, "checkpoints_per_run": saved}
            for name, (a, b, saved) in totals.items()}


def child(kind: str, n: int, rounds: int) -> None:
    """One database, in its own process: forge, LangGraph, raw commits."""
    if kind == "sqlite":
        folder = tempfile.mkdtemp(prefix="forge-bench-")
        os.environ["DATABASE_URL"] = f"sqlite:///{folder}/forge.sqlite3"
        lg_target, raw_target = f"{folder}/langgraph.sqlite3", f"{folder}/raw.sqlite3"
        lga_target = f"{folder}/langgraph-async.sqlite3"
    else:
        os.environ["DATABASE_URL"] = PG_BENCH
        lg_target = lga_target = raw_target = PG_BENCH
    with ExitStack() as stack:
        forge_async, forge_sync, forge_trace = forge_runner()
        runners = {"forge": (forge_async, forge_trace), "forge_sync": (forge_sync, forge_trace),
                   "langgraph": langgraph_runner(kind, lg_target, stack),
                   "langgraph_async": langgraph_async_runner(kind, lga_target, stack)}
        result: dict[str, Any] = alternate(
            {name: phases for name, (phases, _) in runners.items()}, n, rounds)
        for name, (phases, trace) in runners.items():
            counted = commits_per_run(kind, phases, trace)
            result[name]["commits_per_run"], result[name]["unwaited_per_run"] = counted
    result["raw_commits_per_s"] = raw_commit_rate(kind, raw_target)
    print(json.dumps(result))


def profile(kind: str, n: int) -> None:
    """Forge's phases alone through the sync API (everything on this thread), under
    cProfile."""
    import cProfile
    import pstats

    django_on_fresh(kind)
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    a, b, saved = profiler.runcall(forge_runner()[1], n, "")
    result = {"A": n / a, "B": n / b, "checkpoints_per_run": saved}
    print(json.dumps(result))
    print(f"wall {time.perf_counter() - t0:.2f}s (profiled)")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def django_on_fresh(kind: str) -> None:
    """Set Django up on a fresh database of ``kind``: a new SQLite file, or PostgreSQL's
    ``forge_bench`` made anew."""
    if kind == "sqlite":
        os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='forge-bench-')}/f.db"
    else:
        fresh_postgres_database()
        os.environ["DATABASE_URL"] = PG_BENCH
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    django.setup()


def fresh_postgres_database() -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}"')
        conn.execute(f'CREATE DATABASE "{BENCH_DB}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5,
                        help="turns each side takes, alternating (noise hits both alike)")
    parser.add_argument("--child", choices=["sqlite", "postgres"])
    parser.add_argument("--profile", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.profile:
        profile(args.profile, args.threads)
        return
    if args.child:
        child(args.child, args.threads, args.rounds)
        return
    for kind in ("sqlite", "postgres"):
        if kind == "postgres":
            fresh_postgres_database()
        command = [sys.executable, __file__, "--child", kind, "--threads", str(args.threads),
                   "--rounds", str(args.rounds)]
        out = subprocess.run(command, check=True, capture_output=True, text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"\n{kind}: {args.threads} threads, raw insert+commit "
              f"{r['raw_commits_per_s']:,.0f}/s")
        print(f"{'':<14}{'forge':>8}{'langgraph':>11}{'ratio':>7}   "
              f"{'forge':>8}{'langgraph':>11}{'ratio':>7}")
        print(f"{'':<14}{'sync: run_sync / invoke':^26}   {'async: run / ainvoke':^26}")
        for phase, unit in (("A", "starts/s"), ("B", "resumes/s")):
            cells = []
            for mine, peer in (("forge_sync", "langgraph"), ("forge", "langgraph_async")):
                f, lg = r[mine][phase], r[peer][phase]
                cells.append(f"{f:>8,.0f}{lg:>11,.0f}{f / lg:>6.2f}x")
            print(f"{phase} {unit:<12}{cells[0]}   {cells[1]}")
        for figure, label in (("checkpoints_per_run", "checkpoints per finished run"),
                              ("commits_per_run", "commits that wrote, per finished run"),
                              ("unwaited_per_run", "of which did not wait for the disk")):
            print(f"{label}: " + ", ".join(f"{side} {_figure(r[side][figure])}" for side in
                                           ("forge_sync", "forge", "langgraph",
                                            "langgraph_async")))


def _figure(value: float | None) -> str:
    return "not watched" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main()
