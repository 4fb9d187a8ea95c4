"""How sync code runs graphs on the Django store. The tasks are coroutines: a thread-based
backend runs each through ``async_to_sync`` (one event loop per task), and the store's
calls come back to the caller's thread, inside its transaction. The executor's ``*_sync``
methods run lone sync steps on the caller's thread with no event loop; a run that needs
a loop (a parallel step here) goes through ``async_to_sync``
(``DjangoCheckpointStore.run_from_sync``), so the store's calls made from that loop come
back to the caller's thread. That holds inside a request's
thread-sensitive context too (daphne's), where ``asyncio.run`` would send them to the
caller's own, blocked, thread and never finish."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.contrib.auth.models import User
from django.db import connections

from forgeui.models import Interrupt, Run
from forgeui.runs import registry, services
from forgeui.store import DjangoCheckpointStore
from runtime import RunResult
from tests.forgeui.conftest import lines

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def loops_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The thread of every event loop made (``asyncio.run`` and ``async_to_sync`` both
    make theirs with ``new_event_loop``)."""
    seen: list[str] = []
    real = asyncio.new_event_loop

    def made() -> asyncio.AbstractEventLoop:
        seen.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(asyncio, "new_event_loop", made)
    monkeypatch.setattr(asyncio.events, "new_event_loop", made)
    return seen


@pytest.fixture
def saves(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The thread of every save the store made."""
    seen: list[str] = []
    real = DjangoCheckpointStore.save_head_sync

    def recorded(self: DjangoCheckpointStore, *args: Any, **kwargs: Any) -> None:
        seen.append(threading.current_thread().name)
        real(self, *args, **kwargs)

    monkeypatch.setattr(DjangoCheckpointStore, "save_head_sync", recorded)
    return seen


def test_the_tasks_start_and_resume_saving_on_the_callers_thread(
    users: dict[str, User], ledger: Path, loops_made: list[str], saves: list[str],
) -> None:
    started = services.start_run(users["supervisor"], "race",
                                 {"amount": 4, "ledger": str(ledger)})
    assert started.status == "interrupted"
    (interrupt,) = Interrupt.objects.filter(run_id=started.run_id)
    services.answer_interrupt(users["reviewer"], interrupt.pk, "yes")
    assert Run.objects.get(pk=started.run_id).status == "completed"
    assert lines(ledger) == ["paid 4 answer=yes"]
    assert len(loops_made) == 2  # one per task: the start's and the answer's
    # input, after ask, the pause; the claim, after pay: all from this (the task's) thread
    assert saves == [threading.current_thread().name] * 5


def test_a_task_whose_run_needs_a_loop_saves_from_its_own_thread(
    users: dict[str, User], loops: list[str], saves: list[str],
) -> None:
    started = services.start_run(users["supervisor"], "parallel", {"amount": 9})
    assert started.status == "interrupted"
    here = threading.current_thread().name
    assert loops == []  # the task's own loop drives the parallel step: no second one
    assert saves and set(saves) == {here}
    pending = Interrupt.objects.filter(run_id=started.run_id, status="pending")
    assert sorted(i.node for i in pending) == ["finance", "legal"]


def test_inside_a_requests_thread_sensitive_context_a_run_that_needs_a_loop_finishes(
    loops: list[str], saves: list[str],
) -> None:
    """As daphne serves a sync view: a per-request thread, in a thread-sensitive context.
    (Were the saves sent to the view's blocked thread, this fails after a minute, and the
    stuck thread then holds the test process at exit.)"""
    view_thread: list[str] = []

    def view() -> RunResult:
        view_thread.append(threading.current_thread().name)
        try:
            return registry.get_executor("parallel").run_sync({"amount": 2})
        finally:
            connections.close_all()  # as Django does when a request finishes

    async def request() -> RunResult:
        async with ThreadSensitiveContext():
            return await sync_to_async(view)()

    outcome: list[RunResult] = []
    server = threading.Thread(target=lambda: outcome.append(asyncio.run(request())),
                              daemon=True)
    server.start()
    server.join(timeout=60)
    assert outcome, "the run never finished: its saves waited on the view's own thread"
    assert outcome[0].status == "interrupted" and len(outcome[0].interrupts) == 2
    assert loops == view_thread
    assert saves and set(saves) == set(view_thread)
