"""A run reads ``running`` while work on it is in flight, and its true status after.

Through the API and the rows the pages read: an answered node working (at the root and
inside a sub-agent), an answer waiting for its task, a recover, and the recover of a run
whose worker died before it could save again.
"""

from __future__ import annotations

import threading
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from forgeui.inbox import feed
from forgeui.models import Answer, Event
from forgeui.runs import services
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)
QUEUE_ONLY = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
              "notify": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def gated_order(tmp_path: Path) -> dict[str, str]:
    return {"ledger": str(tmp_path / "ledger"), "entered": str(tmp_path / "entered"),
            "gate": str(tmp_path / "gate")}


def wait_for_file(path: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not Path(path).exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def statuses(api: Api, run_id: str) -> dict[str, str]:
    """Each run of the tree by its path, as ``GET /api/runs/{id}`` shows it."""
    body = api.get("auditor", f"/api/runs/{run_id}").json()
    return {"/".join(node["namespace"]): node["status"] for node in body["tree"]}


def run_page(user: User, run_id: str) -> str:
    browser = Client()
    browser.force_login(user)
    response = browser.get(f"/runs/{run_id}/")
    assert response.status_code == 200
    return response.content.decode()


def inbox_row(user: User, interrupt_id: str) -> str:
    """The interrupt's row on ``user``'s "Done by me" tab."""
    browser = Client()
    browser.force_login(user)
    page = browser.get("/", {"tab": "done"}).content.decode()
    return page.split(f'id="int-{interrupt_id}"', 1)[1].split("</tr>", 1)[0]


def call_recover_runs() -> str:
    out = StringIO()
    call_command("recover_runs", "--older-than", "0", stdout=out)
    return out.getvalue()


def run_events(run_id: str) -> list[Any]:
    return list(Event.objects.filter(kind="run.updated", run_id=run_id)
                .order_by("id").values_list("data__status", flat=True))


@pytest.mark.parametrize(("graph", "paused_path"), [
    ("gated", "gated"), ("gated_team", "gated_team/payer")])
def test_an_answered_node_reads_running_while_it_works_then_its_true_status(
        api: Api, users: dict[str, User], tmp_path: Path, graph: str, paused_path: str,
) -> None:
    order = gated_order(tmp_path)
    started = api.start(graph, order)
    (asked,) = api.pending_of(started)
    assert statuses(api, started["run_id"])[paused_path] == "interrupted"
    def answer() -> None:
        try:
            api.post("reviewer", f"/api/interrupts/{asked['id']}/resume", {"value": True})
        finally:  # this thread's own connection
            connections.close_all()

    answering = threading.Thread(target=answer)
    answering.start()  # the task runs on commit, in that thread, and waits at the gate
    try:
        wait_for_file(order["entered"])
        assert api.pending_of(started) == []
        working = statuses(api, started["run_id"])
        assert working == {path: "running" for path in working}, working
        listed = api.get("auditor", "/api/runs", status="running").json()["items"]
        assert started["run_id"] in {r["run_id"] for r in listed}
        assert "running" in run_events(asked["run_id"])  # the live pages heard it
        page = run_page(users["auditor"], started["run_id"])
        node = "/".join([*paused_path.split("/")[1:], "ask_then_pay"])
        assert f'class="graph-node is-running" data-node="{node}"' in page
        assert 'class="status status-interrupted"' not in page
        done_tab = inbox_row(users["reviewer"], asked["id"])
        assert 'run <span class="status status-running">running</span>' in done_tab
    finally:
        Path(order["gate"]).touch()
        answering.join(60)
    done = statuses(api, started["run_id"])
    assert done == {path: "completed" for path in done}, done
    assert run_events(asked["run_id"])[-1] == "completed"
    assert "status-completed" in inbox_row(users["reviewer"], asked["id"])
    # The live inbox hears it too: the run's last event redraws its answered row.
    last = Event.objects.filter(kind="run.updated", run_id=asked["run_id"]).last()
    assert last is not None
    (redrawn,) = [rows["read"] for i, rows in feed.snapshot(last.id).refreshed
                  if i.pk == asked["id"]]
    assert 'run <span class="status status-completed">completed</span>' in redrawn


def test_an_answer_waiting_for_its_task_reads_running_and_recover_runs_finishes_it(
        api: Api, users: dict[str, User], settings: Any, tmp_path: Path) -> None:
    """The worker that should apply the answer never ran it (it died, or was never
    started): the run says it is working, and ``recover_runs`` makes that so."""
    ledger = tmp_path / "ledger"
    started = api.start("race", {"ledger": str(ledger), "amount": 3})
    (asked,) = api.pending_of(started)
    real_tasks = settings.TASKS
    settings.TASKS = QUEUE_ONLY
    services.answer_interrupt(users["reviewer"], asked["id"], "yes")
    settings.TASKS = real_tasks
    assert statuses(api, started["run_id"]) == {"race": "running"}
    assert run_events(started["run_id"])[-1] == "running"

    assert f"apply answer {Answer.objects.get().pk}" in call_recover_runs()
    assert statuses(api, started["run_id"]) == {"race": "completed"}
    assert ledger.read_text() == "paid 3 answer=yes\n"
    assert Answer.objects.get().applied_at is not None


def test_a_row_left_running_with_nothing_in_flight_is_put_back_by_recover_runs(
        api: Api, users: dict[str, User], settings: Any, tmp_path: Path) -> None:
    """A task that marked its answer done and died before the run's rows were told:
    nothing would ever save again, so ``recover_runs`` reads the checkpoints."""
    started = api.start("parallel", {})
    legal = next(i for i in api.pending_of(started) if i["node"] == "legal")
    real_tasks = settings.TASKS
    settings.TASKS = QUEUE_ONLY
    answer = services.answer_interrupt(users["reviewer"], legal["id"], "ok").made
    settings.TASKS = real_tasks
    Answer.objects.mark_applied(answer.pk, "not applied: the interrupt is no longer pending")
    assert statuses(api, started["run_id"]) == {"parallel": "running"}

    out = call_recover_runs()
    assert f"recover thread {started['thread_id']}" in out
    assert statuses(api, started["run_id"]) == {"parallel": "interrupted"}
    assert run_events(started["run_id"])[-1] == "interrupted"


def test_recovering_a_failed_run_reads_running_at_once(
        api: Api, users: dict[str, User], settings: Any, tmp_path: Path) -> None:
    outage = tmp_path / "outage"
    outage.touch()
    started = api.start("flaky", {"fail_while": str(outage)})
    assert statuses(api, started["run_id"]) == {"flaky": "failed"}
    real_tasks = settings.TASKS
    settings.TASKS = QUEUE_ONLY
    services.recover_run(users["supervisor"], started["run_id"])
    settings.TASKS = real_tasks
    body = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert (body["status"], body["error"]) == ("running", None)
    outage.unlink()
    assert f"recover thread {started['thread_id']}" in call_recover_runs()
    assert statuses(api, started["run_id"]) == {"flaky": "completed"}


def test_an_answer_and_the_runs_it_sets_working_reach_the_inbox_in_one_write(
        api: Api, users: dict[str, User], settings: Any, tmp_path: Path) -> None:
    """The answered interrupt's event and its runs' ``running`` go out together, in order:
    one event write (and its ordering lock) per answer, not one per kind."""
    started = api.start("race", {"ledger": str(tmp_path / "ledger"), "amount": 3})
    (asked,) = api.pending_of(started)
    settings.TASKS = QUEUE_ONLY
    with CaptureQueriesContext(connections["default"]) as seen:
        services.answer_interrupt(users["reviewer"], asked["id"], "yes")
    writes = [q["sql"] for q in seen.captured_queries if "INSERT INTO forgeui_event" in q["sql"]]
    assert len(writes) == 1, writes
    last = list(Event.objects.order_by("-id").values_list("kind", "data")[:2])[::-1]
    assert [kind for kind, _ in last] == ["interrupt.answered", "run.updated"]
    assert last[1][1]["status"] == "running"
