"""Forks from the dashboard: from any checkpoint, by reviewers, marked, and with changes.

Also the way back from a failure: a failed run shows its error and a supervisor recovers
it. Tasks run immediately here, so each test sees the run go on by the time it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui import services
from forgeui.exceptions import Forbidden, InvalidRequest
from forgeui.models import AuditEntry, Interrupt, Run
from forgeui.store import DjangoCheckpointStore

from .apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)


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
    assert "/recover/" not in pages["reviewer"] and "/recover/" not in pages["auditor"]
    client = Client()
    client.force_login(users["reviewer"])
    assert client.post(f"/runs/{run.run_id}/recover/").status_code == 403
    outage.unlink()
    client.force_login(users["supervisor"])
    refreshed = client.post(f"/runs/{run.run_id}/recover/", HTTP_HX_REQUEST="true")
    assert "Recovery started" in refreshed.content.decode()
    assert Run.objects.get(pk=run.pk).status == "completed"
