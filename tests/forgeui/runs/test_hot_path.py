"""The dashboard's way of going on with runs (answers applied by tasks, notes, cancels)
never reads a thread's whole lineage of records (to build its history)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

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
