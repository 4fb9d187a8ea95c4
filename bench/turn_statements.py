"""SQL statements and commits of one turn of a long conversation, forge beside LangGraph.

The workload of ``long_thread.py`` (one node appends a message to the list it carries and
pauses; each turn answers it), on SQLite and on PostgreSQL: after ``--warm`` turns, the
next ``--turns`` are traced and averaged. Forge: the Django store's statements as
Django's ``CaptureQueriesContext`` sees them (BEGIN and COMMIT included); its commits:
``COMMIT`` statements and each writing statement run outside a transaction, which on
PostgreSQL is how a save goes (one statement, its own transaction). LangGraph
plain (``SqliteSaver`` / ``PostgresSaver``): SQLite's trace callback (every statement
the engine runs, BEGIN and COMMIT included); on PostgreSQL, each statement psycopg sends
(``execute``, and each row of ``executemany``). Commits that wrote: ``COMMIT``
statements, but for LangGraph on PostgreSQL, whose connection autocommits: there, each
pipeline block that wrote (one implicit transaction, which LangGraph falls back to an
explicit one for) and each writing statement outside one. (Transaction ids drawn would
count both sides alike, but the shared server's other work draws them too.)

Run: ``.venv/bin/python bench/turn_statements.py [--warm 20] [--turns 10]``. Each
database runs in its own subprocess (Django settings are per process).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import long_thread  # noqa: E402  (after the path is set)

Counted = dict[str, float]


def per_turn(turn: Callable[[int], None], first: int, turns: int,
             statements: Callable[[], Any], commits: Callable[[list[str]], int]) -> Counted:
    """Statements and commits per turn over ``turns`` turns from turn ``first``.
    ``statements`` is a context manager yielding the list the statements land in."""
    with statements() as seen:
        for n in range(first, first + turns):
            turn(n)
    return {"statements": len(seen) / turns, "commits": commits(seen) / turns}


def commit_statements(seen: list[str]) -> int:
    return sum(first_word(s) == "COMMIT" for s in seen)


def first_word(sql: str) -> str:
    words = sql.split(None, 1)
    return words[0].upper() if words else ""


def writes(sql: str) -> bool:
    first = first_word(sql)
    if first == "WITH":  # a statement whose parts write (forge's one-statement save)
        return any(f"({verb} " in sql.upper() for verb in ("INSERT", "UPDATE", "DELETE"))
    return first in ("INSERT", "UPDATE", "DELETE")


def transactions_that_wrote(seen: list[str]) -> int:
    """``COMMIT`` statements, and each writing statement outside ``BEGIN`` ... ``COMMIT``:
    on an autocommitting connection such a statement is a transaction of its own."""
    count, inside = 0, False
    for sql in seen:
        first = first_word(sql)
        if first == "BEGIN":
            inside = True
        elif first in ("COMMIT", "ROLLBACK"):
            count += first == "COMMIT"
            inside = False
        elif not inside and writes(sql):
            count += 1
    return count


def forge(kind: str, warm: int, turns: int, stack: ExitStack) -> Counted:
    store, _ = long_thread.forge_store(kind, stack)
    side = long_thread.forge_side(store)
    side.start()
    for n in range(1, warm + 1):
        side.turn(n)
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    @contextmanager
    def captured() -> Iterator[list[str]]:
        seen: list[str] = []
        with CaptureQueriesContext(connections["default"]) as queries:
            yield seen
        seen.extend(q["sql"] for q in queries.captured_queries)

    return per_turn(side.turn, warm + 1, turns, captured, transactions_that_wrote)


def langgraph(kind: str, warm: int, turns: int, stack: ExitStack) -> Counted:
    saver, _ = long_thread.langgraph_saver(kind, stack)
    groups: list[int] = [0]  # LangGraph on PostgreSQL: the transactions that wrote
    side = long_thread.langgraph_side(saver, delta=False)
    side.start()
    for n in range(1, warm + 1):
        side.turn(n)

    @contextmanager
    def traced() -> Iterator[list[str]]:
        seen: list[str] = []
        if kind == "sqlite":
            saver.conn.set_trace_callback(seen.append)
            try:
                yield seen
            finally:
                saver.conn.set_trace_callback(None)
            return
        import psycopg

        execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany
        pipeline = psycopg.Connection.pipeline
        block: list[bool] = []  # inside a pipeline block: has it written yet?

        def note(query: Any, times: int) -> None:
            sql = query.as_string(None) if hasattr(query, "as_string") else str(query)
            seen.extend(sql for _ in range(times))
            if times and writes(sql):
                if block:
                    block[-1] = True
                else:
                    groups[0] += 1

        def counted_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            note(query, 1)
            return execute(self, query, *args, **kwargs)

        def counted_many(self: Any, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            params = list(params_seq)
            note(query, len(params))
            return executemany(self, query, params, **kwargs)

        @contextmanager
        def counted_pipeline(self: Any) -> Iterator[Any]:
            block.append(False)
            try:
                with pipeline(self) as pipe:
                    yield pipe
            finally:
                groups[0] += block.pop()

        psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign]
        psycopg.Cursor.executemany = counted_many  # type: ignore[method-assign]
        psycopg.Connection.pipeline = counted_pipeline  # type: ignore[method-assign,assignment]
        try:
            yield seen
        finally:
            psycopg.Cursor.execute = execute  # type: ignore[method-assign]
            psycopg.Cursor.executemany = executemany  # type: ignore[method-assign]
            psycopg.Connection.pipeline = pipeline  # type: ignore[method-assign]

    commits = commit_statements if kind == "sqlite" else (lambda seen: groups[0])
    return per_turn(side.turn, warm + 1, turns, traced, commits)


def child(kind: str, warm: int, turns: int) -> None:
    found = {}
    for name, measure in (("forge", forge), ("langgraph", langgraph)):
        with ExitStack() as stack:
            found[name] = measure(kind, warm, turns, stack)
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--child", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.child:
        child(args.child, args.warm, args.turns)
        return
    print(f"per turn, after {args.warm} turns, over {args.turns}: statements / commits")
    print(f"{'':10} {'forge':>16} {'LangGraph plain':>18}")
    for kind in ("sqlite", "postgres"):
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--warm",
                              str(args.warm), "--turns", str(args.turns)],
                             check=True, capture_output=True, text=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
        cells = [f"{found[s]['statements']:.1f} / {found[s]['commits']:.1f}"
                 for s in ("forge", "langgraph")]
        print(f"{kind:10} {cells[0]:>16} {cells[1]:>18}")


if __name__ == "__main__":
    main()
