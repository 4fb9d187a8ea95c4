"""``ForgeSaver`` beside LangGraph's own savers on the same databases.

Part 1, put / get per checkpoint: one thread of ``--checkpoints`` checkpoints, each with a
message list one ~200-byte message longer than its parent's and a counter, saved with
``put`` (both channels in ``new_versions``), then each read back by id with ``get_tuple``;
``--repeat`` rounds, the savers taking turns, and the median of each figure.
ForgeSaver is read twice: by a new ``ForgeSaver`` that knows no version ("cold", as a new
process) and by the one that wrote ("warm"). Against ``SqliteSaver`` on the same SQLite
file (WAL, synchronous=FULL, as forge's settings) and ``PostgresSaver`` on the same
PostgreSQL database.

Part 2, a ``--turns`` chat on PostgreSQL: a graph that asks (``interrupt``) and replies,
its messages in ``Annotated[list, add_messages]``; one ``invoke(Command(resume=...))`` per
turn. ForgeSaver with that plain channel, beside ``PostgresSaver`` with the same list in a
``DeltaChannel`` (LangGraph's default snapshot frequency) and plain.
  bytes    what the thread's rows hold: ``pg_column_size`` of each of its rows, summed
           over the saver's tables (indexes and free space not counted)
  resume   median latency of a turn over the first and the last ``--window`` turns, and
           last / first; "cold" resumes with a new saver and graph (a new process)

Run: ``.venv/bin/python bench/langgraph_saver.py [--checkpoints 200] [--turns 1000]``
(``pip install -e '.[langgraph]'``). PostgreSQL on 127.0.0.1: a database made for the run
and dropped after it.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"


def text(n: int) -> str:
    return f"message {n:05d} " + "lorem ipsum dolor sit amet " * 7


@contextmanager
def databases() -> Iterator[tuple[str, str]]:
    """A SQLite file and a PostgreSQL database for this run, with Django on both."""
    name = f"forge_lgsaver_{os.getpid()}"
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    folder = tempfile.mkdtemp(prefix="forge-lgsaver-")
    sqlite_path = f"{folder}/bench.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{sqlite_path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forgeui.settings")
    import django
    from django.conf import settings

    from forgeui.settings import database

    settings.DATABASES["postgres"] = database(f"{PG_SERVER}/{name}")
    django.setup()
    settings.DEBUG = False  # DEBUG keeps every statement
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    call_command("migrate", database="postgres", verbosity=0)
    try:
        yield sqlite_path, f"{PG_SERVER}/{name}"
    finally:
        connections.close_all()
        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- part 1: put / get -------------------------------------------------------------------

def checkpoints(saver: Any, n: int) -> Iterator[tuple[Any, Any, Any]]:
    """(checkpoint, metadata, new_versions) of a growing chat, parent first."""
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.base import empty_checkpoint

    messages: list[Any] = []
    versions: dict[str, Any] = {}
    for i in range(n):
        messages = [*messages, AIMessage(text(i), id=str(uuid.uuid4()))]
        new = {ch: saver.get_next_version(versions.get(ch), None) for ch in ("messages", "n")}
        versions = {**versions, **new}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": messages, "n": i}
        checkpoint["channel_versions"] = dict(versions)
        yield checkpoint, {"source": "loop", "step": i, "parents": {}}, new


def put_get(make: Callable[[], Any], n: int, cold: Callable[[], Any] | None = None
            ) -> dict[str, float]:
    saver = make()
    thread = str(uuid.uuid4())
    config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    made = list(checkpoints(saver, n))
    saved = []
    start = time.perf_counter()
    for checkpoint, metadata, new in made:
        config = saver.put(config, checkpoint, metadata, new)
        saved.append(config)
    put_ms = (time.perf_counter() - start) * 1000 / n
    result = {"put": put_ms}
    for label, reader in (("get", cold() if cold else saver), ("get warm", saver)):
        start = time.perf_counter()
        for i, at in enumerate(saved):
            got = reader.get_tuple(at)
            assert len(got.checkpoint["channel_values"]["messages"]) == i + 1
        result[label] = (time.perf_counter() - start) * 1000 / n
        if cold is None:
            break
    return result


def part1(sqlite_path: str, pg_url: str, n: int, repeat: int
          ) -> list[tuple[str, str, dict[str, float]]]:
    rounds = [one_round(sqlite_path, pg_url, n) for _ in range(repeat)]
    return [(db, name, {op: statistics.median(r[i][2][op] for r in rounds) for op in f})
            for i, (db, name, f) in enumerate(rounds[0])]


def one_round(sqlite_path: str, pg_url: str, n: int
              ) -> list[tuple[str, str, dict[str, float]]]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from forgeui.langgraph import ForgeSaver

    rows = []
    conn = sqlite3.connect(sqlite_path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    lite = SqliteSaver(conn)
    lite.setup()
    rows.append(("sqlite", "SqliteSaver", put_get(lambda: lite, n)))
    rows.append(("sqlite", "ForgeSaver", put_get(lambda: ForgeSaver(), n,
                                                 cold=lambda: ForgeSaver())))
    conn.close()
    with PostgresSaver.from_conn_string(pg_url) as pg:
        pg.setup()
        rows.append(("postgres", "PostgresSaver", put_get(lambda: pg, n)))
    rows.append(("postgres", "ForgeSaver", put_get(lambda: ForgeSaver("postgres"), n,
                                                   cold=lambda: ForgeSaver("postgres"))))
    return rows


# -- part 2: a long chat -----------------------------------------------------------------

def add_message_batches(state: list[Any], batches: list[Any]) -> list[Any]:
    from langgraph.graph.message import add_messages

    for batch in batches:
        state = add_messages(state, batch)
    return state


def chat_graph(saver: Any, delta: bool) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.channels import DeltaChannel
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt

    channel = DeltaChannel(add_message_batches) if delta else add_messages
    State = TypedDict("State", {"messages": Annotated[list, channel]})  # type: ignore[misc]  # noqa: UP013

    def ask(state: Any) -> dict[str, Any]:
        return {"messages": [HumanMessage(interrupt(len(state["messages"]) // 2))]}

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("re: " + state["messages"][-1].content)]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("reply", reply)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "reply")
    builder.add_edge("reply", "ask")
    return builder.compile(checkpointer=saver)


def turn(graph: Any, thread: str, n: int) -> float:
    from langgraph.types import Command

    start = time.perf_counter()
    out = graph.invoke(Command(resume=text(n)), {"configurable": {"thread_id": thread}})
    took = (time.perf_counter() - start) * 1000
    assert out["__interrupt__"][0].value == n + 1, out["__interrupt__"]
    return took


def chat(make: Callable[[], Any], delta: bool, turns: int, window: int, cold: bool
         ) -> tuple[str, dict[str, Any]]:
    """``turns`` turns by one graph; with ``cold``, three more each after turn ``window``
    and after the last, by a new saver and graph each (as a new process would)."""
    graph = chat_graph(make(), delta)
    thread = str(uuid.uuid4())
    assert graph.invoke({"messages": []}, {"configurable": {"thread_id": thread}})
    latencies: list[float] = []
    cold_ms: dict[int, float] = {}
    n = 0
    for i in range(turns):
        latencies.append(turn(graph, thread, n))
        n += 1
        if cold and i + 1 in (window, turns):
            cold_ms[n] = statistics.median(turn(chat_graph(make(), delta), thread, n + k)
                                           for k in range(3))
            n += 3
    state = graph.get_state({"configurable": {"thread_id": thread}}).values
    assert len(state["messages"]) == 2 * n, len(state["messages"])
    return thread, {
        "first": statistics.median(latencies[:window]),
        "last": statistics.median(latencies[-window:]),
        "cold": cold_ms,
    }


def row_bytes(pg_url: str, tables: tuple[str, ...], thread: str) -> int:
    with psycopg.connect(pg_url) as conn:
        return sum(conn.execute(
            f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {table} t "
            "WHERE thread_id = %s", (thread,)).fetchone()[0] for table in tables)


def part2(pg_url: str, turns: int, window: int) -> list[tuple[str, dict[str, Any]]]:
    from langgraph.checkpoint.postgres import PostgresSaver

    from forgeui.langgraph import ForgeSaver

    forge_tables = ("forgeui_langgraphcheckpoint", "forgeui_langgraphblob",
                    "forgeui_langgraphwrite")
    pg_tables = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
    rows = []
    thread, figures = chat(lambda: ForgeSaver("postgres"), False, turns, window, cold=True)
    rows.append(("ForgeSaver, plain add_messages",
                 {**figures, "bytes": row_bytes(pg_url, forge_tables, thread)}))
    for delta, label in ((True, "PostgresSaver, DeltaChannel"),
                         (False, "PostgresSaver, plain add_messages")):
        with PostgresSaver.from_conn_string(pg_url) as pg:
            pg.setup()
            thread, figures = chat(lambda pg=pg: pg, delta, turns, window, cold=False)
        rows.append((label, {**figures, "bytes": row_bytes(pg_url, pg_tables, thread)}))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    window = min(args.window, max(1, args.turns // 4))
    with databases() as (sqlite_path, pg_url):
        one = part1(sqlite_path, pg_url, args.checkpoints, args.repeat)
        two = part2(pg_url, args.turns, window)
    print(f"put / get per checkpoint, ms ({args.checkpoints} checkpoints, a growing list; "
          f"median of {args.repeat})")
    print(f"  {'database':<10}{'saver':<16}{'put':>8}{'get':>8}{'get warm':>10}")
    for db, name, f in one:
        warm = f"{f['get warm']:10.3f}" if "get warm" in f else f"{'':10}"
        print(f"  {db:<10}{name:<16}{f['put']:8.3f}{f['get']:8.3f}{warm}")
    by = {(db, name): f for db, name, f in one}
    ratios = {}
    for db, theirs in (("sqlite", "SqliteSaver"), ("postgres", "PostgresSaver")):
        for op in ("put", "get"):
            ratios[(db, op)] = by[(db, "ForgeSaver")][op] / by[(db, theirs)][op]
    print("  ForgeSaver / LangGraph's: " + ", ".join(
        f"{db} {op} {r:.2f}x" for (db, op), r in ratios.items()))
    print()
    print(f"a {args.turns}-turn chat on PostgreSQL (resume medians over {window} turns, ms)")
    print(f"  {'saver':<36}{'bytes':>12}{'first':>8}{'last':>8}{'last/first':>12}  cold")
    for name, f in two:
        cold = ", ".join(f"after turn {n}: {ms:.1f}" for n, ms in f["cold"].items())
        print(f"  {name:<36}{f['bytes']:>12,}{f['first']:8.2f}{f['last']:8.2f}"
              f"{f['last'] / f['first']:12.2f}  {cold}")
    forge, delta = two[0][1], two[1][1]
    print()
    print("targets")
    for label, ok, figure in (
        ("put/get within 1.2x of LangGraph's savers", all(r <= 1.2 for r in ratios.values()),
         ", ".join(f"{r:.2f}x" for r in ratios.values())),
        ("chat bytes <= PostgresSaver with DeltaChannel", forge["bytes"] <= delta["bytes"],
         f"{forge['bytes']:,} vs {delta['bytes']:,}"),
        ("resume last <= 1.5 x first", forge["last"] <= 1.5 * forge["first"],
         f"{forge['last'] / forge['first']:.2f}x"),
    ):
        print(f"  {'PASS' if ok else 'FAIL'}  {label}: {figure}")


if __name__ == "__main__":
    main()
