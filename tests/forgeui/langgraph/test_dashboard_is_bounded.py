"""A long LangGraph conversation run from the dashboard costs the same per turn at its end
as at its start: the statements an answer runs, the bytes it stores (the bridge's head
records beside ``ForgeSaver``'s rows, nothing copied whole), and the statements of the
pages that show it, none of which rebuilds the thread from its first record."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.models import Sum
from django.db.models.functions import Coalesce, Length
from django.test import Client
from django.test.utils import CaptureQueriesContext

from forgeui import models
from tests.forgeui.apiclient import Api

# Enough that a cost growing with the thread (a copy of its messages, a statement per
# earlier turn) is plain between the first window and the last.
TURNS = 100
WINDOW = 10
# What each table keeps per row, by the columns that grow with what a step stored.
STORED = [(models.Checkpoint, ("record", "head")), (models.Thread, ("head",)),
          (models.LangGraphCheckpoint, ("checkpoint",)), (models.LangGraphBlob, ("blob",)),
          (models.LangGraphWrite, ("blob",))]


def stored_bytes() -> int:
    total = 0
    for model, columns in STORED:
        sums = model.objects.aggregate(**{c: Coalesce(Sum(Length(c)), 0) for c in columns})
        total += sum(sums.values())
    return total


def statements(fn: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured.captured_queries)


def turn_costs(api: Api, started: dict[str, Any], viewer: Client, turn: int
               ) -> tuple[int, int, int, int]:
    """Answer the pending turn: the statements that ran, the bytes stored, and the
    statements of the interrupt page and the run page after it."""
    [pending] = api.pending_of(started)
    before = stored_bytes()
    answered = statements(lambda: api.post(
        "reviewer", f"/api/interrupts/{pending['id']}/resume", {"value": f"message {turn}"}))
    grew = stored_bytes() - before
    [now] = models.Interrupt.objects.filter(run_id=started["run_id"], status="pending")
    page = statements(lambda: viewer.get(f"/interrupts/{now.pk}/"))
    run_page = statements(lambda: viewer.get(f"/runs/{started['run_id']}/"))
    return answered, grew, page, run_page


def test_a_long_conversation_costs_the_same_per_turn(more_graphs: Api,
                                                    replays: list[str]) -> None:
    started = more_graphs.start("lg_loop", {"messages": []})
    viewer = Client()
    viewer.force_login(more_graphs.users["auditor"])
    early, late = [], []
    for turn in range(TURNS):
        if WINDOW <= turn < 2 * WINDOW or turn >= TURNS - WINDOW:
            (early if turn < 2 * WINDOW else late).append(
                turn_costs(more_graphs, started, viewer, turn))
            continue
        [pending] = more_graphs.pending_of(started)
        more_graphs.post("reviewer", f"/api/interrupts/{pending['id']}/resume",
                         {"value": f"message {turn}"})
    assert replays == []  # no answer and no page rebuilt the thread from its records
    for column in (0, 2, 3):  # statements: the same at the end as at the start
        assert {c[column] for c in late} == {c[column] for c in early}, (column, early, late)
    early_bytes = statistics.median(c[1] for c in early)
    late_bytes = statistics.median(c[1] for c in late)
    assert late_bytes <= early_bytes * 1.25, (early_bytes, late_bytes)
