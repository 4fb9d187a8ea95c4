"""Long-thread benchmark: one chat loop resumed for N turns, forge beside LangGraph.

The workload: one node that loops on itself; each turn it appends one ~200-byte message
``{"role": "user", "content": answer}`` to the list it carries in its output and pauses
for the next answer; the caller resumes it once per turn (forge: ``resume_sync``,
LangGraph: ``invoke(Command(resume=...))``). Each side runs at its default durability
(forge "sync", LangGraph "async"): both checkpoint every step. LangGraph turns a message
dict written to a ``DeltaChannel`` into a ``HumanMessage`` with an id, and stores that;
it is what a user of that channel gets, so it is measured as it is.

Backends, each N in a process of its own (Django settings and peak RSS are per process),
each on a fresh database:
  forge      ``InMemoryCheckpointStore``; ``DjangoCheckpointStore`` on SQLite and on
             PostgreSQL
  langgraph  ``InMemorySaver``, ``SqliteSaver``, ``PostgresSaver``, each with the list in
             a plain ``operator.add`` channel and in a ``DeltaChannel`` (snapshot every
             50 updates; "n/a" when the installed LangGraph has none)

Reported per backend and N:
  bytes      what the thread added to the store: SQLite, the file after VACUUM (WAL
             checkpointed); PostgreSQL, ``pg_total_relation_size`` of every table of the
             database summed, after VACUUM FULL; memory, every object the store reaches,
             each counted once. Minus the same figure for the empty store.
  growth     bytes(largest N) / bytes(smallest N)
  resume     median latency of the first and the last 20 turns, and last / first
  vs plain   last-20 median / LangGraph plain's last-20 median on the same store
  list       time to materialise the whole history (forge ``store.list``, LangGraph
             ``list(get_state_history)``) and how many checkpoints it holds
  rss        the process's peak RSS (``ru_maxrss``), over the turns, the list and the fork
  page       forge on a database only: the dashboard's first page of the thread's
             timeline (``/threads/<id>/``, oldest and newest first) and of
             ``GET /api/threads/{id}/checkpoints``, as an auditor; the slowest of the
             three, median of 5 after one warm-up
  fork       bytes the store gained by forking the N-turn thread (forge ``fork_sync``;
             LangGraph's fork is ``update_state`` on the latest checkpoint, a new branch):
             live row payload (SQLite ``dbstat``, PostgreSQL ``pgstattuple``, tables and
             indexes), or the held bytes for memory stores
then one pass/fail line per target, at the largest N.

Run: ``.venv/bin/python bench/long_thread.py [--turns 100 1000] [--budget 600]``
(LangGraph comes with the ``bench`` extra: ``pip install -e '.[bench]'``).
``--quick`` runs 20 and 40 turns, in under a minute, to check the bench itself works.
A backend whose turns outrun ``--budget`` seconds stops there, is marked partial and
skips its list; ``--max-gb`` caps each process's address space so a store that grows
without bound fails alone instead of starving the machine. PostgreSQL runs on
127.0.0.1, in a database made for each process and dropped after it.
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import gc
import hashlib
import json
import operator
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
THREAD = "long-thread"
WINDOW = 20  # turns in each latency median
SNAPSHOT_EVERY = 50  # DeltaChannel's snapshot frequency
FORGE = ("forge/memory", "forge/sqlite", "forge/postgres")
STORES = ("memory", "sqlite", "postgres")
SIDES = ("forge", "langgraph-plain", "langgraph-delta")


def answer(turn: int) -> str:
    """A reproducible answer that makes a 200-byte message; hex digits, so it compresses
    about as well as prose does."""
    digest, text = str(turn).encode(), f"turn {turn:05d} "
    while len(text) < 169:
        digest = hashlib.sha256(digest).digest()
        text += digest.hex()
    return text[:169]


@dataclass
class Side:
    """One implementation of the workload, driven the same way on every backend."""

    start: Callable[[], None]  # run to the first pause
    turn: Callable[[int], None]  # answer turn ``n`` (1-based), run to the next pause
    history: Callable[[int], int]  # materialise the history of ``n`` turns: checkpoints
    fork: Callable[[], None]


# -- forge ---------------------------------------------------------------------------

def forge_side(store: Any) -> Side:
    from runtime import DurableExecutor, NodeContext

    def ask(inp: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        reply = ctx.interrupt({"question": "next?", "turn": len(inp["messages"])})
        return {"messages": inp["messages"] + [{"role": "user", "content": reply}]}

    ex = DurableExecutor(nodes=[("ask", ask)], edges={"ask": lambda out, ctx=None: "ask"},
                         store=store, name="long_thread")

    def start() -> None:
        assert ex.run_sync({"messages": []}, thread_id=THREAD).interrupted

    def turn(n: int) -> None:
        result = ex.resume_sync(THREAD, answer(n))
        assert result.interrupt_payload == {"question": "next?", "turn": n}, result

    def history(n: int) -> int:
        checkpoints = asyncio.run(store.list(THREAD))
        assert checkpoints[-1].pending_input["messages"][-1]["content"] == answer(n)
        assert len(checkpoints[-1].pending_input["messages"]) == n
        return len(checkpoints)

    def fork() -> None:
        ex.fork_sync(THREAD)

    return Side(start, turn, history, fork)


def forge_store(store: str, stack: ExitStack) -> tuple[Any, Storage]:
    if store == "memory":
        from runtime import InMemoryCheckpointStore

        memory = InMemoryCheckpointStore()
        return memory, HeldBytes(memory)
    if store == "sqlite":
        path = stack.enter_context(temporary_folder()) / "forge.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
        storage: Storage = SqliteFile(str(path))
    else:
        url = stack.enter_context(fresh_postgres_database())
        os.environ["DATABASE_URL"] = url
        storage = PostgresTables(url)
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    settings.DEBUG = False  # DEBUG keeps every statement: memory no deployment spends
    if store == "sqlite":
        # Setting up is not measured: the schema need not wait for the disk per
        # migration. The connection closes after, so the store's own opens as configured.
        connections["default"].cursor().execute("PRAGMA synchronous=OFF")
    call_command("migrate", verbosity=0)
    connections.close_all()
    stack.callback(connections.close_all)
    from forgeui.store import DjangoCheckpointStore

    return DjangoCheckpointStore(), storage


# -- LangGraph -----------------------------------------------------------------------

def delta_channel() -> Any:
    """LangGraph's ``DeltaChannel`` class, or None when the installed version has none."""
    try:
        from langgraph.channels import DeltaChannel
    except ImportError:
        return None
    return DeltaChannel


def append_batches(messages: list[Any], batches: list[list[Any]]) -> list[Any]:
    """``DeltaChannel``'s reducer: folds a batch of appends at once (batching-invariant)."""
    return messages + [m for batch in batches for m in batch]


def langgraph_graph(saver: Any, delta: bool) -> Any:
    from langgraph.graph import START, StateGraph
    from langgraph.types import interrupt

    channel = (delta_channel()(append_batches, snapshot_frequency=SNAPSHOT_EVERY)
               if delta else operator.add)

    # Built by call: the class syntax would leave the annotation a string (this module's
    # ``from __future__ import annotations``) naming a local LangGraph cannot see.
    State = TypedDict("State", {"messages": Annotated[list, channel]})  # type: ignore[misc]  # noqa: UP013

    def ask(state: State) -> dict[str, Any]:
        reply = interrupt({"question": "next?", "turn": len(state["messages"])})
        return {"messages": [{"role": "user", "content": reply}]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "ask")
    return builder.compile(checkpointer=saver)


def langgraph_side(saver: Any, delta: bool) -> Side:
    from langgraph.types import Command

    graph = langgraph_graph(saver, delta)
    config = {"configurable": {"thread_id": THREAD}}

    def start() -> None:
        assert graph.invoke({"messages": []}, config)["__interrupt__"]

    def turn(n: int) -> None:
        paused = graph.invoke(Command(resume=answer(n)), config)["__interrupt__"]
        assert paused[0].value == {"question": "next?", "turn": n}, paused

    def history(n: int) -> int:
        states = list(graph.get_state_history(config))
        assert content(states[0].values["messages"][-1]) == answer(n)
        assert len(states[0].values["messages"]) == n
        return len(states)

    def fork() -> None:
        graph.update_state(graph.get_state(config).config, {"messages": []})

    return Side(start, turn, history, fork)


def content(message: Any) -> str:
    """A message's text: a dict as the node wrote it, or the ``HumanMessage`` LangGraph
    turns a message dict into when it is written to a ``DeltaChannel``."""
    return message["content"] if isinstance(message, dict) else message.content  # type: ignore[no-any-return]


def langgraph_saver(store: str, stack: ExitStack) -> tuple[Any, Storage]:
    if store == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        memory = InMemorySaver()
        return memory, HeldBytes(memory)
    if store == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = str(stack.enter_context(temporary_folder()) / "langgraph.sqlite3")
        conn = sqlite3.connect(path, check_same_thread=False)
        stack.callback(conn.close)
        # As forge's SQLite settings: WAL, and a commit is on disk when it returns.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        saver = SqliteSaver(conn)
        saver.setup()
        return saver, SqliteFile(path)
    from langgraph.checkpoint.postgres import PostgresSaver

    url = stack.enter_context(fresh_postgres_database())
    saver = stack.enter_context(PostgresSaver.from_conn_string(url))
    saver.setup()
    return saver, PostgresTables(url)


# -- what a store holds --------------------------------------------------------------

class Storage(abc.ABC):
    """How many bytes a store holds: ``on_disk`` as a file system sees it, ``live`` as the
    payload of its rows (fine-grained enough to see a single small write)."""

    @abc.abstractmethod
    def on_disk(self) -> int:
        """Bytes the store takes where it keeps its data."""

    def live(self) -> int:
        return self.on_disk()


class HeldBytes(Storage):
    """Every object reachable from the store, each counted once, so data shared between
    checkpoints costs once; classes, modules and functions are code, not held data."""

    CODE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
            types.MethodType, types.CodeType)

    def __init__(self, store: Any) -> None:
        self.store = store

    def on_disk(self) -> int:
        gc.collect()
        seen: set[int] = set()
        stack, total = [self.store], 0
        while stack:
            obj = stack.pop()
            if id(obj) in seen or isinstance(obj, self.CODE):
                continue
            seen.add(id(obj))
            total += sys.getsizeof(obj)
            stack.extend(gc.get_referents(obj))
        return total


class SqliteFile(Storage):
    def __init__(self, path: str) -> None:
        self.path = path

    def on_disk(self) -> int:
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        return os.path.getsize(self.path)

    def live(self) -> int:
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute("SELECT sum(payload) FROM dbstat").fetchone()[0]
        finally:
            conn.close()


PG_TABLE_IDS = ("SELECT oid FROM pg_class "
                "WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'")
PG_TABLES = f"SELECT relname FROM pg_class WHERE oid IN ({PG_TABLE_IDS})"
# Every table of the schema, its TOAST table and the indexes of both.
PG_RELATIONS = f"""
WITH heaps AS (
    {PG_TABLE_IDS}
    UNION SELECT reltoastrelid FROM pg_class WHERE oid IN ({PG_TABLE_IDS}) AND reltoastrelid <> 0)
SELECT oid FROM heaps
UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM heaps)
"""


class PostgresTables(Storage):
    def __init__(self, url: str) -> None:
        self.url = url

    def on_disk(self) -> int:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True) as conn:
            tables = [row[0] for row in conn.execute(PG_TABLES)]
            # Only the schema's tables: the catalogs are not the store's, and rewriting
            # them too would make the bench wait on them.
            conn.execute(sql.SQL("VACUUM FULL {}").format(
                sql.SQL(", ").join(map(sql.Identifier, tables))))
            row = conn.execute(f"SELECT coalesce(sum(pg_total_relation_size(oid)), 0) "
                               f"FROM pg_class WHERE oid IN ({PG_TABLE_IDS})").fetchone()
        return int(row[0])  # type: ignore[index]

    def live(self) -> int:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
            row = conn.execute(f"SELECT coalesce(sum((pgstattuple(oid)).tuple_len), 0) "
                               f"FROM ({PG_RELATIONS}) AS relations").fetchone()
        return int(row[0])  # type: ignore[index]


@contextmanager
def temporary_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="forge-long-thread-") as folder:
        yield Path(folder)


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A database of this process's own, dropped when it is done (FORCE: whatever a
    library left connected must not keep it alive)."""
    import psycopg

    name = f"forge_long_thread_{os.getpid()}"
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{PG_SERVER}/{name}"
    finally:
        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# -- one backend, in its own process -------------------------------------------------

def measure(side: Side, storage: Storage, turns: int, budget: float) -> dict[str, Any]:
    empty = storage.on_disk()
    side.start()
    latencies: list[float] = []
    began = time.perf_counter()
    for n in range(1, turns + 1):
        t0 = time.perf_counter()
        side.turn(n)
        latencies.append(time.perf_counter() - t0)
        if time.perf_counter() - began > budget:
            break
    done = len(latencies)
    out: dict[str, Any] = {"turns": done, "partial": done < turns,
                           **latency_figures(latencies)}
    if done == turns:
        out.update(timed_history(side, done))
    out["bytes"] = storage.on_disk() - empty
    before = storage.live()
    side.fork()
    out["fork_bytes"] = storage.live() - before
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def timed_history(side: Side, turns: int) -> dict[str, Any]:
    """How long materialising the history takes, and its checkpoints; a history too big
    for ``--max-gb`` is a figure too, and the rest of the run goes on without it."""
    t0 = time.perf_counter()
    try:
        checkpoints = side.history(turns)
    except MemoryError:
        return {"list_error": "oom"}
    return {"list_s": time.perf_counter() - t0, "checkpoints": checkpoints}


def latency_figures(latencies: list[float]) -> dict[str, float]:
    """Medians of the first and the last turns (fewer than ``WINDOW`` on short runs, so
    the two windows never overlap)."""
    window = max(1, min(WINDOW, len(latencies) // 2))
    return {"first_ms": statistics.median(latencies[:window]) * 1000,
            "last_ms": statistics.median(latencies[-window:]) * 1000}


def child(backend: str, turns: int, budget: float, max_gb: float) -> None:
    limit = int(max_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    side_name, store = backend.split("/")
    with ExitStack() as stack:
        if side_name == "forge":
            made, storage = forge_store(store, stack)
            side = forge_side(made)
        else:
            saver, storage = langgraph_saver(store, stack)
            side = langgraph_side(saver, delta=side_name == "langgraph-delta")
        try:
            result = measure(side, storage, turns, budget)
            if side_name == "forge" and store != "memory" and not result["partial"]:
                result["page_ms"] = first_pages_ms(THREAD)
        except MemoryError:
            result = {"error": f"out of memory (--max-gb {max_gb:g})"}
    print(json.dumps(result))


def first_pages_ms(thread_id: str) -> float:
    """The slowest of the dashboard's first pages of the thread, median of 5, in ms."""
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.test import Client

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    auditor = User.objects.create_user("bench-auditor")
    auditor.groups.add(Group.objects.get_or_create(name="auditor")[0])
    client = Client()
    client.force_login(auditor)
    slowest = 0.0
    for url in (f"/threads/{thread_id}/", f"/threads/{thread_id}/?order=newest",
                f"/api/threads/{thread_id}/checkpoints?limit=50"):
        times = []
        for _ in range(6):
            t0 = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - t0)
            assert response.status_code == 200, (url, response.status_code)
        slowest = max(slowest, statistics.median(times[1:]) * 1000)
    return slowest


def run_child(backend: str, turns: int, budget: float, max_gb: float) -> dict[str, Any]:
    if backend.startswith("langgraph-delta") and delta_channel() is None:
        return {"error": "n/a"}
    command = [sys.executable, __file__, "--child", backend, "--turns", str(turns),
               "--budget", str(budget), "--max-gb", str(max_gb)]
    try:
        # The budget bounds the turns; what follows them (list, VACUUM, fork) gets as long
        # again, twice over, before the process is given up on.
        out = subprocess.run(command, capture_output=True, text=True, timeout=3 * budget + 60)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"failed: {last[:60]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# -- the report ----------------------------------------------------------------------

Results = dict[str, dict[int, dict[str, Any]]]  # backend -> turns -> figures


def backends() -> list[str]:
    return [f"{side}/{store}" for store in STORES for side in SIDES]


def print_table(results: Results, turns: list[int]) -> None:
    header = (f"{'backend':<26}{'turns':>6}{'bytes':>15}{'growth':>8}{'first ms':>10}"
              f"{'last ms':>9}{'last/1st':>9}{'vs plain':>9}{'list s':>9}{'ckpts':>7}"
              f"{'rss MB':>8}{'fork B':>12}{'page ms':>9}")
    print(header)
    print("-" * len(header))
    for backend in backends():
        for n in turns:
            print(table_row(results, backend, n, turns))
    print("* partial: the turns outran --budget (figures at the turn it reached, no list);"
          " oom: the list outgrew --max-gb")


def table_row(results: Results, backend: str, n: int, turns: list[int]) -> str:
    r = results[backend][n]
    label = f"{backend}{'*' if r.get('partial') else ''}"
    if "error" in r:
        return f"{label:<26}{n:>6}  {r['error']}"
    plain = results[f"langgraph-plain/{backend.split('/')[1]}"][n]
    growth = ratio(r, results[backend][turns[0]], "bytes") if n == turns[-1] else None
    return (f"{label:<26}{r['turns']:>6}{r['bytes']:>15,}{cell(growth, 8, 2)}"
            f"{r['first_ms']:>10.2f}{r['last_ms']:>9.2f}"
            f"{cell(r['last_ms'] / r['first_ms'], 9, 2)}{cell(ratio(r, plain, 'last_ms'), 9, 2)}"
            f"{r.get('list_error', cell(r.get('list_s'), 9, 3)):>9}"
            f"{cell(r.get('checkpoints'), 7, 0)}{r['rss_mb']:>8.0f}{r['fork_bytes']:>12,}"
            f"{cell(r.get('page_ms'), 9, 1)}")


def ratio(mine: dict[str, Any], theirs: dict[str, Any], key: str) -> float | None:
    if mine.get(key) is None or theirs.get(key) in (None, 0) or "error" in theirs:
        return None
    return float(mine[key]) / float(theirs[key])


def cell(value: float | None, width: int, digits: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


Check = tuple[str, bool | None]


def target_checks(results: Results, turns: list[int]) -> list[Check]:
    """The long-thread targets, at the largest N, for each forge backend."""
    checks: list[Check] = []
    for backend in FORGE:
        mine = results[backend][turns[-1]]
        for label, figures, test in targets(results, backend, turns):
            usable = all(f is not None for f in figures) and not mine.get("partial")
            checks.append((f"{backend} N={turns[-1]}: {label}",
                           test(*figures) if usable else None))
    return checks


def targets(results: Results, backend: str,
            turns: list[int]) -> Iterator[tuple[str, list[Any], Callable[..., bool]]]:
    """(label, figures, test of the figures); a figure is None where it is missing."""
    low, high = turns[0], turns[-1]
    store = backend.split("/")[1]
    mine = results[backend][high]
    plain = results[f"langgraph-plain/{store}"][high]
    if store != "memory":
        delta = results[f"langgraph-delta/{store}"][high]
        yield ("bytes <= LangGraph DeltaChannel's", [mine.get("bytes"), delta.get("bytes")],
               operator.le)
    if low != high:
        bound = 1.2 * high / low  # "bytes(1000) <= 12 x bytes(100)", for any pair of N
        yield (f"bytes({high}) <= {bound:.1f} x bytes({low})",
               [ratio(mine, results[backend][low], "bytes")], lambda g: g <= bound)
    yield ("resume last 20 <= 1.5 x first 20", [mine.get("last_ms"), mine.get("first_ms")],
           lambda last, first: last <= 1.5 * first)
    yield ("resume last 20 <= LangGraph plain's", [ratio(mine, plain, "last_ms")],
           lambda r: r <= 1.0)
    yield ("list <= LangGraph plain's get_state_history",
           [mine.get("list_s"), plain.get("list_s")], operator.le)
    yield ("peak RSS <= LangGraph plain's + 50 MB", [mine.get("rss_mb"), plain.get("rss_mb")],
           lambda a, b: a <= b + 50)
    yield ("fork writes < 10 KB", [mine.get("fork_bytes")], lambda b: b < 10_000)
    if store != "memory":
        yield ("dashboard first pages < 200 ms", [mine.get("page_ms")], lambda ms: ms < 200)


def print_checks(checks: list[Check]) -> None:
    print("\ntargets")
    for label, passed in checks:
        verdict = "n/a " if passed is None else ("pass" if passed else "FAIL")
        print(f"  {verdict}  {label}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--quick", action="store_true", help="20 and 40 turns")
    parser.add_argument("--budget", type=float, default=600,
                        help="seconds of turns per backend before it stops (partial)")
    parser.add_argument("--max-gb", type=float, default=12,
                        help="address space each backend's process may take")
    parser.add_argument("--only", nargs="+", choices=backends(), metavar="BACKEND",
                        help=f"backends to run, of: {' '.join(backends())}")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    turns = sorted(set([20, 40] if args.quick else args.turns))
    if args.child:
        child(args.child, turns[0], args.budget, args.max_gb)
        return
    chosen = args.only or backends()
    results: Results = {b: {n: {"error": "not run"} for n in turns} for b in backends()}
    for backend in chosen:
        for n in turns:
            t0 = time.perf_counter()
            results[backend][n] = run_child(backend, n, args.budget, args.max_gb)
            print(f"ran {backend} N={n} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print(f"LangGraph {version('langgraph')}, DeltaChannel "
          f"{'available' if delta_channel() else 'n/a'}; turns {turns}, budget "
          f"{args.budget:g} s, max {args.max_gb:g} GB per process\n")
    print_table(results, turns)
    print_checks(target_checks(results, turns))


if __name__ == "__main__":
    main()
