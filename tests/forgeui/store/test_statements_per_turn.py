"""How many SQL statements one turn of a conversation costs on each database.

A turn is ``resume_sync`` on a paused chat: the answer's claim, the node's step, and the
next pause. A start is ``run_sync`` up to the first pause. The limits are the figures in
``docs/architecture.md`` ("Statements of one turn"); a change that adds a statement to the
hot path fails here until the documented figure moves with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor, NodeContext

# Statements, at most, BEGIN and COMMIT included: (start to the first pause, one resumed
# turn up to its pause). PostgreSQL sends each save as one statement, events included,
# which is its own transaction: no BEGIN, no COMMIT.
LIMITS = {"sqlite": (14, 20), "postgres": (3, 4)}
# A turn commits the claim, the answered node's step and the next pause.
COMMITS_PER_TURN = 3
# What commits a save: its COMMIT; on PostgreSQL the save's one statement (which starts
# with the thread's compare-and-set, forgeui.models.queries).
COMMITTING = {"sqlite": ("COMMIT",), "postgres": ("WITH w0 AS (UPDATE forgeui_thread",)}


def chat(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    reply = ctx.interrupt({"question": "next?", "turn": len(task["messages"])})
    return {"messages": [*task["messages"], {"role": "user", "content": reply}]}


def executor(using: str) -> DurableExecutor:
    return DurableExecutor(nodes=[("chat", chat)], edges={"chat": lambda out, ctx=None: "chat"},
                           store=DjangoCheckpointStore(using), name="statements")


def statements(using: str, call: Callable[[], Any]) -> list[str]:
    with CaptureQueriesContext(connections[using]) as captured:
        call()
    return [q["sql"][:90] for q in captured.captured_queries]


def counts(using: str) -> tuple[list[str], list[str]]:
    ex = executor(using)
    start = statements(using, lambda: ex.run_sync({"messages": []}, thread_id="chat"))
    ex.resume_sync("chat", "warm-up")  # the first resume of a run meets new rows
    turn = statements(using, lambda: ex.resume_sync("chat", "hello"))
    paused = ex.store.load_sync("chat")  # type: ignore[union-attr]
    assert paused is not None and paused.pending_input["messages"][-1]["content"] == "hello"
    return start, turn


def check(using: str) -> None:
    start, turn = counts(using)
    most_start, most_turn = LIMITS[using]
    assert len(start) <= most_start, "\n".join(["", *start])
    assert len(turn) <= most_turn, "\n".join(["", *turn])
    assert sum(sql.startswith(COMMITTING[using]) for sql in turn) == COMMITS_PER_TURN
    if using == "postgres":  # no transaction is opened around a save's one statement
        assert not any(sql.startswith(("BEGIN", "COMMIT", "SAVEPOINT")) for sql in turn)


@pytest.mark.django_db(transaction=True, databases=["sqlite"])
def test_statements_per_turn_on_sqlite(close_worker_connections: None) -> None:
    check("sqlite")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_statements_per_turn_on_postgres(close_worker_connections: None) -> None:
    check("postgres")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_a_connection_plans_a_save_once_on_postgres(close_worker_connections: None) -> None:
    """Turns after the first few run the save's statement prepared on the connection
    (``FORGE_PG_PREPARED``): the server plans it once, not at every save."""
    ex = executor("postgres")
    ex.run_sync({"messages": []}, thread_id="chat")
    for n in range(8):
        ex.resume_sync("chat", f"turn {n}")
    with connections["postgres"].cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any(sql.startswith("WITH w0 AS (UPDATE forgeui_thread") for sql in prepared), prepared
    assert any(sql.startswith("SELECT latest_checkpoint_id, head") for sql in prepared), prepared
