"""The embedded default's task backend: enqueue returns before the task runs, and tasks
that wait hold no thread."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from django_tasks import TaskResultStatus, task

from forgeui.models import Run
from forgeui.runs import services
from forgeui.runs.backends import wait_for_tasks

release = threading.Event()
ran: list[str] = []


@task()
def blocked_task(tag: str) -> str:
    release.wait(10)
    ran.append(tag)
    return tag


@pytest.fixture
def thread_pool() -> object:
    with override_settings(TASKS={"default": {"BACKEND": "forgeui.runs.backends.ThreadPoolBackend",
                                              "OPTIONS": {"WORKERS": 2}}}):
        yield
    release.set()
    wait_for_tasks(10)


@pytest.mark.django_db  # a sync task's thread closes its connection if it went bad
@pytest.mark.usefixtures("thread_pool")
def test_enqueue_returns_at_once_and_the_task_runs_beside() -> None:
    release.clear()
    ran.clear()
    result = blocked_task.enqueue("first")
    assert ran == []  # the caller did not wait for the task
    assert result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING)
    release.set()
    wait_for_tasks(10)
    assert ran == ["first"] and result.status == TaskResultStatus.SUCCESSFUL


waiting_now = [0, 0]  # (in flight now, most at once)


@task()
async def waiting_task(seconds: float) -> None:
    waiting_now[0] += 1  # one event loop: no lock needed
    waiting_now[1] = max(waiting_now[1], waiting_now[0])
    await asyncio.sleep(seconds)
    waiting_now[0] -= 1


@pytest.mark.usefixtures("thread_pool")
def test_coroutine_tasks_wait_in_flight_beyond_the_thread_count() -> None:
    """Runs awaiting a model hold no thread: far more than WORKERS wait at once."""
    waiting_now[:] = [0, 0]
    begun = time.monotonic()
    results = [waiting_task.enqueue(0.5) for _ in range(30)]
    wait_for_tasks(10)
    assert waiting_now[1] == 30
    assert time.monotonic() - begun < 3  # two threads in turn would take 7.5 s
    assert {r.status for r in results} == {TaskResultStatus.SUCCESSFUL}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("thread_pool")
def test_waiting_runs_pause_together_on_the_embedded_loop() -> None:
    graphs = {**settings.FORGE_GRAPHS,
              "waiting": "tests.forgeui.deployment.waiting_graphs:waiting"}
    with override_settings(FORGE_GRAPHS=graphs):
        begun = time.monotonic()
        runs = [services.start_run(None, "waiting", {"n": n, "seconds": 1}) for n in range(20)]
        wait_for_tasks(30)
        elapsed = time.monotonic() - begun
    statuses = set(Run.objects.filter(pk__in=[r.run_id for r in runs])
                   .values_list("status", flat=True))
    assert statuses == {"interrupted"}
    assert elapsed < 6, elapsed  # two threads in turn: 10 s


@task()
async def counting_task() -> int:
    return await Run.objects.acount()  # its own database call, on its own terms


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("thread_pool")
def test_a_task_enqueued_from_async_code_does_not_inherit_its_thread() -> None:
    """Enqueued inside ``sync_to_async`` on a server's event loop (an async view, the MCP
    server), the task's own ``sync_to_async`` calls must not wait on the caller's thread."""
    from asgiref.sync import sync_to_async

    async def from_async_code() -> Any:
        return await sync_to_async(counting_task.enqueue)()

    result = asyncio.run(from_async_code())
    wait_for_tasks(10)
    assert result.status == TaskResultStatus.SUCCESSFUL, result.status
    assert result.return_value == 0
