"""The dashboard's way of going on with runs (answers applied by tasks, notes, cancels)
never reads a thread's whole lineage of records (to build its history), and an answer is
applied from one trip to the database for it, its run's graph and its notes."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from forgeui.models import Interrupt, Run
from forgeui.runs import services
from forgeui.store import DjangoCheckpointStore

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def no_history(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []

    def refuse(self: DjangoCheckpointStore, found: str, *args: Any) -> Any:
        built.append(found)
        raise AssertionError(f"the lineage of {found} read on the hot path")

    monkeypatch.setattr(DjangoCheckpointStore, "read_lineage", refuse)
    monkeypatch.setattr(DjangoCheckpointStore, "read_thread", refuse)
    return built


def test_answers_notes_and_cancels_go_on_from_the_head(
        users: dict[str, User], no_history: list[str]) -> None:
    run = services.start_run(users["supervisor"], "supervisor", {"topic": "fees"})
    pending = {i.node: i for i in Interrupt.objects.of_tree(run.thread_id).pending()}
    services.answer_interrupt(users["reviewer"], pending["draft"].pk,
                              {"type": "accept", "args": None}, steering="short please")
    services.cancel_run(users["supervisor"], pending["find_sources"].run_id)
    assert Run.objects.get(pk=run.run_id).status == "completed"
    assert no_history == []


def test_an_answer_is_applied_from_one_trip_for_it_its_graph_and_its_notes(
        users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "transfer", {"amount": 5})
    [pending] = Interrupt.objects.of_tree(run.thread_id).pending()
    with CaptureQueriesContext(connection) as queries:  # the task runs inline here
        services.answer_interrupt(users["reviewer"], pending.pk, True, steering="fine")
    assert Run.objects.get(pk=run.run_id).status == "completed"
    statements = [q["sql"] for q in queries.captured_queries]
    task = statements[next(n for n, sql in enumerate(statements)
                           if sql.startswith('SELECT "forgeui_answer"')):]
    assert 'INNER JOIN "forgeui_run"' in task[0]  # the graph comes with the answer
    assert task[1].startswith('SELECT "forgeui_steeringnote"')  # in the same trip
    assert not any(sql.startswith('SELECT "forgeui_run"."graph"') for sql in task)
    assert sum(sql.startswith('SELECT "forgeui_steeringnote"') for sql in task) == 1
