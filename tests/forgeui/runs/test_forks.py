"""Forks from the dashboard: from any checkpoint, by reviewers, marked, and with changes.

Also the way back from a failure: a failed run shows its error and a supervisor recovers
it. Tasks run immediately here, so each test sees the run go on by the time it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from forgeui.models import AuditEntry, Interrupt, Run
from forgeui.runs import services
from forgeui.runs.exceptions import Forbidden, InvalidRequest
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)
ACCEPT = {"type": "accept", "args": None}  # what the example graphs' actions take


def started(user: User, graph: str, input: Any) -> Run:
    run_id = services.start_run(user, graph, input).run_id
    return Run.objects.get(pk=run_id)


def checkpoints(thread_id: str) -> list[Any]:
    return DjangoCheckpointStore().list_sync(thread_id)


def test_a_fork_of_a_checkpoint_taken_mid_step_goes_on_by_itself(
        users: dict[str, User]) -> None:
    run = started(users["supervisor"], "supervisor", {"topic": "q3"})
    history = checkpoints(run.thread_id)
    mid_step = next(cp for cp in history if cp.status == "running")
    new_thread = services.fork_thread(users["reviewer"], run.thread_id, mid_step.id)
    fork = Run.objects.get(thread_id=new_thread)
    assert fork.status == "interrupted" and fork.error is None
    asked = Interrupt.objects.of_tree(new_thread).pending()
    assert sorted(asked.values_list("sub_agent_id", flat=True)) == ["research_agent",
                                                                    "writer_agent"]
    entry = AuditEntry.objects.get(action="thread.fork")
    assert entry.actor == users["reviewer"] and entry.before_checkpoint_id == mid_step.id
    assert entry.detail["recovered"] is True and entry.detail["new_run_id"] == fork.run_id
    assert entry.detail["seq"] == history.index(mid_step) + 1
    timeline = logged_in(users["auditor"]).get(f"/threads/{run.thread_id}/").content.decode()
    entry_html = timeline.split(f'id="cp-{mid_step.id}"', 1)[1]
    assert f'#{entry.detail["seq"]}<' in entry_html.split("</li>", 1)[0]  # as the timeline says
    assert Run.objects.get(pk=run.pk).status == "interrupted"  # the original is untouched


def test_a_fork_of_a_paused_checkpoint_is_not_recovered(users: dict[str, User]) -> None:
    run = started(users["supervisor"], "transfer", {"amount": 5})
    new_thread = services.fork_thread(users["reviewer"], run.thread_id)
    assert Run.objects.get(thread_id=new_thread).status == "interrupted"
    assert AuditEntry.objects.get(action="thread.fork").detail["recovered"] is False
    assert not AuditEntry.objects.filter(action="run.recover").exists()


def test_a_supervisor_recovers_a_failed_run(users: dict[str, User], tmp_path: Path) -> None:
    outage = tmp_path / "outage"
    outage.touch()
    run = started(users["supervisor"], "flaky", {"fail_while": str(outage)})
    run.refresh_from_db()
    assert run.status == "failed" and "upstream unavailable" in run.error["message"]
    with pytest.raises(Forbidden):
        services.recover_run(users["reviewer"], run.run_id)
    services.recover_run(users["supervisor"], run.run_id)  # still failing: failed again
    assert Run.objects.get(pk=run.pk).status == "failed"
    outage.unlink()
    services.recover_run(users["supervisor"], run.run_id)
    run.refresh_from_db()
    assert run.status == "completed" and run.output["fetched"] is True
    assert AuditEntry.objects.filter(action="run.recover", actor=users["supervisor"]).count() == 2
    with pytest.raises(InvalidRequest, match="completed"):
        services.recover_run(users["supervisor"], run.run_id)


def test_recover_through_the_api(users: dict[str, User], tmp_path: Path) -> None:
    api = Api(users)
    outage = tmp_path / "outage"
    outage.touch()
    run_id = api.start("flaky", {"fail_while": str(outage)})["run_id"]
    outage.unlink()
    assert api.post("reviewer", f"/api/runs/{run_id}/recover").status_code == 403
    response = api.post("supervisor", f"/api/runs/{run_id}/recover")
    assert response.status_code == 202 and response.json() == {"run_id": run_id,
                                                                "status": "recovering"}
    assert api.get("auditor", f"/api/runs/{run_id}").json()["status"] == "completed"
    assert api.post("supervisor", f"/api/runs/{run_id}/recover").status_code == 422
    assert api.post("supervisor", "/api/runs/nope/recover").status_code == 404


def test_the_run_page_shows_the_error_and_a_recover_button_for_supervisors(
        users: dict[str, User], tmp_path: Path) -> None:
    outage = tmp_path / "outage"
    outage.touch()
    run = started(users["supervisor"], "flaky", {"fail_while": str(outage)})
    pages = {}
    for who in ("supervisor", "reviewer", "auditor"):
        client = Client()
        client.force_login(users[who])
        pages[who] = client.get(f"/runs/{run.run_id}/").content.decode()
        assert "upstream unavailable" in pages[who] and "node <code>fetch</code>" in pages[who]
    assert f"/runs/{run.run_id}/recover/" in pages["supervisor"]
    listed = logged_in(users["auditor"]).get("/runs/").content.decode()
    assert '<small class="error">' in listed and "upstream unavailable" in listed
    assert "/recover/" not in pages["reviewer"] and "/recover/" not in pages["auditor"]
    client = Client()
    client.force_login(users["reviewer"])
    assert client.post(f"/runs/{run.run_id}/recover/").status_code == 403
    outage.unlink()
    client.force_login(users["supervisor"])
    refreshed = client.post(f"/runs/{run.run_id}/recover/", HTTP_HX_REQUEST="true")
    assert "Recovery started" in refreshed.content.decode()
    assert Run.objects.get(pk=run.pk).status == "completed"


# -- edit-then-fork -----------------------------------------------------------------------------


def test_a_fork_with_an_edited_input_reaches_the_node_with_it(users: dict[str, User]) -> None:
    run = started(users["supervisor"], "supervisor", {"topic": "q3"})
    writer = Interrupt.objects.of_tree(run.thread_id).pending().get(sub_agent_id="writer_agent")
    new_thread = services.fork_thread(users["supervisor"], run.thread_id,
                                      inputs={writer.pk: {"topic": "edited"}})
    fork = Run.objects.get(thread_id=new_thread)
    asked = {i.sub_agent_id: i for i in Interrupt.objects.of_tree(new_thread).pending()}
    assert fork.status == "interrupted"
    assert asked["writer_agent"].payload["draft"] == "Draft about edited."
    assert asked["research_agent"].payload["sources"][0].startswith("q3")
    services.answer_interrupt(users["reviewer"], asked["writer_agent"].pk, ACCEPT)
    services.answer_interrupt(users["reviewer"], asked["research_agent"].pk, ACCEPT)
    fork.refresh_from_db()
    assert fork.status == "completed"
    assert fork.output["report"]["writer_agent"]["draft"] == "Draft about edited."
    edit = AuditEntry.objects.get(action="fork.edit")
    assert edit.actor == users["supervisor"] and edit.thread_id == new_thread
    assert edit.detail["edits"][0] | {"value": None} == {
        "kind": "input", "interrupt_id": writer.pk, "node": "draft", "value": None,
        "namespace": ["supervisor", "writer_agent"], "task_id": writer.task_id, "order": 0}
    assert writer.run.status == "interrupted" and Interrupt.objects.get(pk=writer.pk).status \
        == "pending"


def test_a_fork_with_a_prefilled_answer_goes_on_with_it(users: dict[str, User]) -> None:
    run = started(users["supervisor"], "transfer", {"amount": 7})
    (asked,) = Interrupt.objects.of_tree(run.thread_id).pending()
    new_thread = services.fork_thread(users["reviewer"], run.thread_id,
                                      answers={asked.pk: False})
    fork = Run.objects.get(thread_id=new_thread)
    assert fork.status == "completed" and fork.output["approved"] is False
    copy = Interrupt.objects.get(root_thread_id=new_thread)
    assert copy.answered_by == users["reviewer"]
    assert AuditEntry.objects.get(action="fork.edit").detail["edits"][0]["kind"] == "answer"
    assert Interrupt.objects.get(pk=asked.pk).status == "pending"


def test_fork_changes_are_checked_before_anything_is_forked(users: dict[str, User]) -> None:
    api = Api(users)
    thread = api.start("parallel_approvals", {"amount": 5})["thread_id"]
    finance = Interrupt.objects.of_tree(thread).pending().get(node="finance")
    url = f"/api/threads/{thread}/fork"
    wrong = api.post("reviewer", url, {"answers": {finance.pk: {"approved": "yes"}}})
    assert wrong.status_code == 422
    assert wrong.json()["detail"][0]["loc"] == ["body", "answers", finance.pk, "approved"]
    unknown = api.post("supervisor", url, {"inputs": {"nope": 1}})
    assert unknown.status_code == 422 and "not pending" in unknown.json()["detail"][0]["msg"]
    both = api.post("supervisor", url,
                    {"inputs": {finance.pk: 1}, "answers": {finance.pk: 1}})
    assert both.status_code == 422
    assert Run.objects.roots().count() == 1
    assert api.post("auditor", url, {"inputs": {finance.pk: 1}}).status_code == 403
    done = api.post("reviewer", url, {"answers": {finance.pk: {"approved": True}}})
    assert done.status_code == 201
    fork = done.json()["thread_id"]
    assert list(Interrupt.objects.of_tree(fork).pending().values_list("node", flat=True)) \
        == ["legal"]


# -- on the pages: badges both ways, and the fork-with-changes form -----------------------------


def test_forks_are_marked_and_linked_both_ways(users: dict[str, User]) -> None:
    run = started(users["supervisor"], "transfer", {"amount": 1})
    first = checkpoints(run.thread_id)[0]
    new_thread = services.fork_thread(users["reviewer"], run.thread_id, first.id)
    fork = Run.objects.get(thread_id=new_thread)
    client = logged_in(users["auditor"])
    badge = f"fork of <a href=\"/threads/{run.thread_id}/#cp-{first.id}\">"
    inbox = client.get("/").content.decode()
    assert inbox.count("tag-fork") == 1 and badge in inbox and " at #1" in inbox
    runs = client.get("/runs/").content.decode()
    assert badge in runs and f'href="/runs/{fork.run_id}/"' in runs and "1 fork:" in runs
    tree = client.get(f"/runs/{fork.run_id}/").content.decode()
    assert badge in tree
    original = client.get(f"/runs/{run.run_id}/").content.decode()
    assert "Forked into:" in original and f'href="/runs/{fork.run_id}/"' in original
    assert "tag-fork" not in client.get(f"/runs/{run.run_id}/").content.decode().split(
        "Forked into:")[0]
    timeline = client.get(f"/threads/{new_thread}/").content.decode()
    assert badge in timeline
    assert "Forked into:" in client.get(f"/threads/{run.thread_id}/").content.decode()


def test_the_run_page_forks_with_an_edited_input_and_keeps_bad_json(
        users: dict[str, User]) -> None:
    run = started(users["supervisor"], "transfer", {"amount": 1})
    (asked,) = Interrupt.objects.of_tree(run.thread_id).pending()
    client = logged_in(users["supervisor"])
    page = client.get(f"/runs/{run.run_id}/").content.decode()
    assert "Fork with changes" in page and "&quot;amount&quot;: 1" in page
    url = f"/runs/{run.run_id}/fork/"
    bad = client.post(url, {"interrupt_id": asked.pk, "change": "input",
                            "value": '{"amount": 5'}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 422
    html = bad.content.decode()
    assert "not valid JSON" in html and "{&quot;amount&quot;: 5</textarea>" in html
    assert Run.objects.roots().count() == 1
    done = client.post(url, {"interrupt_id": asked.pk, "change": "input",
                             "value": '{"amount": 500}'}, HTTP_HX_REQUEST="true")
    assert done.status_code == 204
    fork = Run.objects.exclude(pk=run.pk).get(parent_run__isnull=True)
    assert done["HX-Redirect"] == f"/runs/{fork.run_id}/"
    (copy,) = Interrupt.objects.of_tree(fork.thread_id).pending()
    services.answer_interrupt(users["reviewer"], copy.pk, True)
    assert Run.objects.get(pk=fork.pk).output["input"] == {"amount": 500}
    assert "input of ask edited" in client.get(f"/runs/{fork.run_id}/").content.decode()
    assert logged_in(users["auditor"]).post(url, {"interrupt_id": asked.pk, "value": "1"}
                                            ).status_code == 403


def test_a_queued_recover_shows_at_once_and_the_tree_polls_until_done(
        users: dict[str, User], tmp_path: Path) -> None:
    outage = tmp_path / "outage"
    outage.touch()
    run = started(users["supervisor"], "flaky", {"fail_while": str(outage)})
    client = logged_in(users["supervisor"])
    assert "data-live-busy" not in client.get(f"/runs/{run.run_id}/").content.decode()
    queued = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
              "notify": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    with override_settings(TASKS=queued):
        page = client.post(f"/runs/{run.run_id}/recover/", HTTP_HX_REQUEST="true")
    html = page.content.decode()
    assert "recovering…" in html and "data-live-busy" in html
    assert "run-error" not in html and f"/runs/{run.run_id}/recover/" not in html
