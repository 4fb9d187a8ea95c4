"""A LangGraph graph whose nodes are ``async def``, run by forge as a sync one is: started,
answered, cancelled and forked through the API (``ainvoke`` on the task's loop), its calls
on one thread serialised by the awaited lock, and many of its runs in flight at once beside
forge graphs on the embedded backend, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from itertools import pairwise

import pytest
from django.conf import settings
from django.db import connections
from django.test import override_settings

from forgeui.langgraph import locks
from forgeui.langgraph.locks import thread_lock, thread_lock_async
from forgeui.models import Run, SteeringNote
from forgeui.runs import registry
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import ROOT, database_url, django_env

from . import in_flight

GRAPHS = {"lg_async": "tests.forgeui.langgraph.team_graphs:thinking",
          "waiting": "tests.forgeui.deployment.waiting_graphs:waiting"}
QUICK = {"log": [], "seconds": 0.01}


@pytest.fixture
def async_graphs() -> Iterator[None]:
    with override_settings(FORGE_GRAPHS={**settings.FORGE_GRAPHS, **GRAPHS}):
        yield


def answer(api: Api, interrupt_id: str, value: object, **extra: object) -> int:
    return int(api.post("reviewer", f"/api/interrupts/{interrupt_id}/resume",
                        {"value": value, **extra}).status_code)


@pytest.mark.usefixtures("async_graphs")
def test_a_run_of_async_nodes_pauses_and_its_answer_completes_it(api: Api) -> None:
    assert registry.get_executor("lg_async").awaits
    assert not registry.get_executor("lg_two").awaits  # sync nodes keep invoke()
    started = api.start("lg_async", QUICK)
    [asked] = api.pending_of(started)
    assert asked["node"] == "think" and asked["payload"] == {"question": "go on?"}
    assert answer(api, asked["id"], "yes", steering="mind the totals") == 202
    assert answer(api, asked["id"], "again") == 409  # the second answer is stale
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "completed"
    assert run["output"] == {**QUICK, "log": ["approved=yes", "finished"]}
    assert SteeringNote.objects.get().outcome == "applied"  # kept beside, not in the value


@pytest.mark.usefixtures("async_graphs")
def test_a_run_of_async_nodes_is_cancelled_and_forked(api: Api) -> None:
    cancelled = api.start("lg_async", QUICK)
    [asked] = api.pending_of(cancelled)
    assert api.post("supervisor", f"/api/runs/{cancelled['run_id']}/cancel").status_code == 202
    assert Run.objects.get(pk=cancelled["run_id"]).status == "cancelled"
    assert answer(api, asked["id"], "late") == 409
    started = api.start("lg_async", QUICK)
    [first] = api.pending_of(started)
    response = api.post("reviewer", f"/api/threads/{started['thread_id']}/fork",
                        {"checkpoint_id": first["checkpoint_id"]})
    assert response.status_code == 201, response.content
    forked = response.json()["thread_id"]
    [again] = api.pending(root_thread_id=forked)  # recovered by ainvoke(None): asked anew
    assert again["id"] != first["id"] and again["node"] == "think"
    assert answer(api, again["id"], "forked") == 202
    fork = Run.objects.get(thread_id=forked, parent_run__isnull=True)
    assert fork.status == "completed" and fork.output["log"] == ["approved=forked", "finished"]
    assert [i["id"] for i in api.pending_of(started)] == [first["id"]]  # untouched


@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
@pytest.mark.parametrize("alias", ["default", pytest.param("postgres",
                                                           marks=pytest.mark.postgres)])
def test_the_awaited_lock_admits_one_holder_at_a_time(alias: str) -> None:
    """Two awaited holders on one loop and a blocking one on a thread of its own."""
    held: list[tuple[float, float]] = []

    async def hold_awaiting() -> None:
        async with thread_lock_async("one-thread", using=alias):
            began = time.monotonic()
            await asyncio.sleep(0.2)
            held.append((began, time.monotonic()))

    def hold_blocking() -> None:
        try:
            with thread_lock("one-thread", using=alias):
                began = time.monotonic()
                time.sleep(0.2)
                held.append((began, time.monotonic()))
        finally:
            connections.close_all()

    async def all_three() -> None:
        blocking = threading.Thread(target=hold_blocking)
        blocking.start()
        await asyncio.gather(hold_awaiting(), hold_awaiting())
        await asyncio.to_thread(blocking.join, 60)

    try:
        asyncio.run(all_three())
    finally:
        locks._lock_thread.submit(connections.close_all).result()
    assert len(held) == 3
    spans = sorted(held)
    assert all(later[0] >= earlier[1] for earlier, later in pairwise(spans))


@pytest.mark.slow
@pytest.mark.parametrize("alias", [
    pytest.param("default", marks=pytest.mark.django_db(transaction=True)),
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.django_db(
        transaction=True, databases=["postgres"])]),
])
@pytest.mark.usefixtures("async_graphs")
def test_async_langgraph_runs_wait_in_flight_beside_forge_runs(alias: str) -> None:
    """Each run's node awaits a second: in turn they would take twelve."""
    script = "from tests.forgeui.langgraph import in_flight; in_flight.main()"
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "shell", "-c", script],
                          env=django_env(database_url(alias)), cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # Below three quarters of the serial time: the starts themselves take seconds on a
    # loaded machine, and runs in turn could not finish under the serial time at all.
    serial_s = in_flight.SECONDS * (in_flight.LANGGRAPH_RUNS + in_flight.FORGE_RUNS)
    assert seen["paused_s"] < 0.75 * serial_s, seen
    runs = Run.objects.using(alias).filter(thread_id__in=seen["threads"], parent_run__isnull=True)
    assert sorted(runs.values_list("graph", "status")) == sorted(
        [("lg_async", "completed")] * in_flight.LANGGRAPH_RUNS
        + [("waiting", "completed")] * in_flight.FORGE_RUNS)
    outputs = [r.output["log"] for r in runs if r.graph == "lg_async"]
    assert outputs == [["approved=yes", "finished"]] * in_flight.LANGGRAPH_RUNS
