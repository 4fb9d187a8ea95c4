"""Forks where people decide and audit: who forked, from where, with the real input, and
a fork's first checkpoint that says what happens next instead of "failed"."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.models import Interrupt, Run
from forgeui.runs import services
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)
QUEUE_ONLY = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
              "notify": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def started(user: User, graph: str, input: Any) -> Run:
    return Run.objects.get(pk=services.start_run(user, graph, input).run_id)


def mid_step(thread_id: str) -> tuple[int, Any]:
    """The first checkpoint saved between steps (past the first), and its place."""
    history = DjangoCheckpointStore().list_sync(thread_id)
    found = next(cp for cp in history if cp.status == "running" and cp.step > 0)
    return history.index(found) + 1, found


def test_a_fork_keeps_its_starter_names_its_forker_and_keeps_the_run_input(
        users: dict[str, User]) -> None:
    original = started(users["supervisor"], "deploy", {"version": "2.4.0"})
    seq, source = mid_step(original.thread_id)
    new_thread = services.fork_thread(users["reviewer"], original.thread_id, source.id)
    fork = Run.objects.get(thread_id=new_thread)
    assert fork.started_by == users["supervisor"] and fork.forked_by == users["reviewer"]
    assert Run.objects.get(pk=original.pk).forked_by is None
    assert fork.input == {"version": "2.4.0"}  # copied past its first step

    (asked,) = Interrupt.objects.of_tree(new_thread).pending()
    page = logged_in(users["auditor"]).get(f"/interrupts/{asked.pk}/").content.decode()
    marker = page.split('class="fork-marker"', 1)[1].split("</p>", 1)[0]
    assert original.thread_id[:8] in marker and f"at checkpoint #{seq}" in marker
    assert "by <strong>reviewer</strong>" in marker
    context = page.split("<h3>Run input</h3>", 1)[1].split("<h3>", 1)[0]
    assert "2.4.0" in context and "None." not in context

    runs = logged_in(users["auditor"]).get("/runs/").content.decode()
    fork_row = runs.split(f"/threads/{new_thread}/", 1)[1].split("</tr>", 1)[0]
    assert "supervisor" in fork_row and "forked by reviewer" in fork_row
    api = Api(users)
    listed = {r["thread_id"]: r for r in api.get("auditor", "/api/runs").json()["items"]}
    assert (listed[new_thread]["started_by"], listed[new_thread]["forked_by"]) == (
        "supervisor", "reviewer")
    assert (listed[original.thread_id]["started_by"], listed[original.thread_id]["forked_by"]
            ) == ("supervisor", None)


def test_decisions_in_a_fork_name_their_origin_and_forker(users: dict[str, User]) -> None:
    original = started(users["supervisor"], "transfer", {"amount": 5})
    (first,) = Interrupt.objects.of_tree(original.thread_id).pending()
    services.answer_interrupt(users["reviewer"], first.pk, True)
    history = DjangoCheckpointStore().list_sync(original.thread_id)
    paused = next(cp for cp in history if cp.status == "interrupted")
    new_thread = services.fork_thread(users["reviewer"], original.thread_id, paused.id)
    (copy,) = Interrupt.objects.of_tree(new_thread).pending()
    services.answer_interrupt(users["supervisor"], copy.pk, False)
    seq = history.index(paused) + 1

    auditor = logged_in(users["auditor"])
    page = auditor.get("/audit/decisions/").content.decode()
    fork_row = page.split(f'data-interrupt="{copy.pk}"', 1)[1].split("</tr>", 1)[0]
    assert f"at checkpoint #{seq}" in fork_row and "by <strong>reviewer</strong>" in fork_row
    plain_row = page.split(f'data-interrupt="{first.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "fork-marker" not in plain_row

    exported = auditor.get("/audit/decisions/export.csv")
    rows = {r["interrupt_id"]: r for r in csv.DictReader(io.StringIO(
        b"".join(exported.streaming_content).decode()))}
    origin = json.loads(rows[copy.pk]["forked_from"])
    assert origin == {"thread_id": original.thread_id, "run_id": original.run_id,
                      "checkpoint_id": paused.id, "seq": seq}
    assert rows[copy.pk]["forked_by"] == "reviewer"
    assert rows[first.pk]["forked_from"] == rows[first.pk]["forked_by"] == ""
    as_json = json.loads(b"".join(auditor.get("/audit/decisions/export.json")
                                  .streaming_content))
    by_id = {item["interrupt_id"]: item for item in as_json["items"]}
    assert by_id[copy.pk]["forked_from"] == origin and by_id[copy.pk]["forked_by"] == "reviewer"
    assert by_id[first.pk]["forked_from"] is None


def test_a_mid_step_fork_says_what_happens_next_and_never_reads_failed(
        users: dict[str, User]) -> None:
    original = started(users["supervisor"], "deploy", {"version": "3.0.0"})
    _, source = mid_step(original.thread_id)
    waiting = [t["node"] for t in source.engine.tasks if t["status"] == "pending"]
    with override_settings(TASKS=QUEUE_ONLY):  # its recover still queued
        new_thread = services.fork_thread(users["reviewer"], original.thread_id, source.id)
    fork = Run.objects.get(thread_id=new_thread)
    assert (fork.status, fork.error) == ("running", None)

    api = Api(users)
    (start,) = api.get("auditor", f"/api/threads/{new_thread}/checkpoints").json()["items"]
    expected = f"Forked before {waiting[0]} ran: resuming will run {waiting[0]}"
    assert (start["status"], start["error"], start["next_step"]) == ("forked", None, expected)
    page = logged_in(users["auditor"]).get(f"/threads/{new_thread}/").content.decode()
    assert expected + "." in page
    assert "status-failed" not in page and ">failed<" not in page

    services.recover_run(users["supervisor"], fork.run_id)
    fork.refresh_from_db()
    assert fork.status == "interrupted"
    items = api.get("auditor", f"/api/threads/{new_thread}/checkpoints").json()["items"]
    assert items[0]["status"] == "forked"
    assert "failed" not in {i["status"] for i in items}


def test_a_checkpoint_that_did_fail_shows_why(users: dict[str, User], tmp_path: Path) -> None:
    outage = tmp_path / "outage"
    outage.touch()
    run = started(users["supervisor"], "flaky", {"fail_while": str(outage)})
    page = logged_in(users["auditor"]).get(f"/threads/{run.thread_id}/").content.decode()
    failed = page.split('class="entry entry-failed"', 1)[1].split("</li>", 1)[0]
    assert "Why it failed" in failed and "upstream unavailable" in failed
    items = Api(users).get("auditor", f"/api/threads/{run.thread_id}/checkpoints").json()
    assert "upstream unavailable" in items["items"][-1]["error"]["message"]


def test_a_mid_step_fork_of_a_tree_leaves_its_paused_sub_agents_paused(
        users: dict[str, User]) -> None:
    original = started(users["supervisor"], "supervisor", {"topic": "q4"})
    research = Interrupt.objects.of_tree(original.thread_id).pending().get(
        sub_agent_id="research_agent")
    services.answer_interrupt(users["reviewer"], research.pk, {"type": "accept", "args": None})
    history = DjangoCheckpointStore().list_sync(original.thread_id)
    # The root as the answer was taken in: mid-step, its sub-agents still paused.
    claim = next(cp for cp in history if cp.status == "running" and cp.engine.children)
    with override_settings(TASKS=QUEUE_ONLY):  # its recover still queued
        new_thread = services.fork_thread(users["reviewer"], original.thread_id, claim.id)
    tree = {"/".join(r.namespace): r.status for r in Run.objects.of_tree(new_thread)}
    assert tree == {"supervisor": "running", "supervisor/research_agent": "interrupted",
                    "supervisor/writer_agent": "interrupted"}
    services.recover_run(users["supervisor"], Run.objects.get(thread_id=new_thread).run_id)
    tree = {"/".join(r.namespace): r.status for r in Run.objects.of_tree(new_thread)}
    assert tree == {"supervisor": "interrupted", "supervisor/research_agent": "interrupted",
                    "supervisor/writer_agent": "interrupted"}
    assert Interrupt.objects.of_tree(new_thread).pending().count() == 2
