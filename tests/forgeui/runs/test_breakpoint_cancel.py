"""A breakpoint's "no": cancelling the paused run with a reason, so the guarded node
never runs, recorded as "cancelled at breakpoint" in the decisions and the audit log."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from forgeui.models import Answer, AnswerKind, AuditEntry, Interrupt, InterruptStatus, Run
from forgeui.runs import services
from forgeui.runs.exceptions import InvalidRequest, StaleAnswer
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import lines

pytestmark = pytest.mark.django_db(transaction=True)


def paused_before_ship(users: dict[str, User], ledger: Path) -> Interrupt:
    started = services.start_run(users["supervisor"], "guarded",
                                 {"version": "2.4.0", "ledger": str(ledger)})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


def test_cancel_at_a_breakpoint_stops_the_guarded_node(users: dict[str, User],
                                                       ledger: Path) -> None:
    interrupt = paused_before_ship(users, ledger)
    assert interrupt.is_breakpoint and interrupt.kind == "before"
    answer = services.cancel_at_breakpoint(users["reviewer"], interrupt.pk,
                                           "  2.4.0 has not passed QA yet  ")
    run = Run.objects.get(pk=interrupt.run_id)
    assert run.status == "cancelled" and run.output is None
    assert lines(ledger) == []  # ship never ran
    interrupt.refresh_from_db()
    assert interrupt.status == InterruptStatus.CANCELLED
    assert interrupt.answered_by == users["reviewer"]
    answer.refresh_from_db()
    assert answer.kind == AnswerKind.CANCEL and answer.value is None
    assert answer.reason == "2.4.0 has not passed QA yet"
    assert answer.outcome == "the run was cancelled"
    entry = AuditEntry.objects.get(action="breakpoint.cancel")
    assert entry.detail["decision"] == "cancelled at breakpoint"
    assert entry.detail["reason"] == "2.4.0 has not passed QA yet"
    assert entry.actor == users["reviewer"] and entry.object_id == interrupt.pk


def test_continue_runs_the_guarded_node(users: dict[str, User], ledger: Path) -> None:
    interrupt = paused_before_ship(users, ledger)
    services.answer_interrupt(users["reviewer"], interrupt.pk, True)
    assert Run.objects.get(pk=interrupt.run_id).status == "completed"
    assert lines(ledger) == ["shipped app-2.4.0.tar.gz"]


@pytest.mark.parametrize("reason", ["", "   ", None, 42])
def test_a_cancel_needs_a_reason(users: dict[str, User], ledger: Path, reason: object) -> None:
    interrupt = paused_before_ship(users, ledger)
    with pytest.raises(InvalidRequest, match="a reason is required"):
        services.cancel_at_breakpoint(users["reviewer"], interrupt.pk, reason)  # type: ignore[arg-type]
    interrupt.refresh_from_db()
    assert interrupt.status == InterruptStatus.PENDING and not Answer.objects.exists()


def test_a_reason_is_capped(users: dict[str, User], ledger: Path) -> None:
    interrupt = paused_before_ship(users, ledger)
    with pytest.raises(InvalidRequest, match="longer than 4000 characters"):
        services.cancel_at_breakpoint(users["reviewer"], interrupt.pk, "x" * 4001)
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.PENDING


def test_only_a_breakpoint_is_cancelled_from_its_answer(users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "custom", {})
    question = Interrupt.objects.of_tree(started.thread_id).pending().get()
    with pytest.raises(InvalidRequest, match="only a breakpoint"):
        services.cancel_at_breakpoint(users["reviewer"], question.pk, "no")
    assert Run.objects.get(pk=question.run_id).status == "interrupted"


def test_the_second_decision_loses(users: dict[str, User], ledger: Path) -> None:
    interrupt = paused_before_ship(users, ledger)
    services.cancel_at_breakpoint(users["reviewer"], interrupt.pk, "not yet")
    with pytest.raises(StaleAnswer) as lost:
        services.answer_interrupt(users["supervisor"], interrupt.pk, True)
    assert "cancelled at this breakpoint by reviewer" in lost.value.reason
    assert lines(ledger) == []
    other = paused_before_ship(users, ledger)
    services.answer_interrupt(users["supervisor"], other.pk, True)
    with pytest.raises(StaleAnswer, match="already answered by supervisor"):
        services.cancel_at_breakpoint(users["reviewer"], other.pk, "too late")
    assert lines(ledger) == ["shipped app-2.4.0.tar.gz"]


def test_api_cancel_at_a_breakpoint(users: dict[str, User], ledger: Path) -> None:
    api = Api(users)
    interrupt = paused_before_ship(users, ledger)
    url = f"/api/interrupts/{interrupt.pk}/cancel"
    empty = api.post("reviewer", url, {"reason": " "})
    assert empty.status_code == 422
    assert empty.json()["detail"][0] == {"loc": ["body", "reason"], "type": "invalid",
                                         "msg": "say why the run is cancelled: a reason is "
                                                "required"}
    assert api.post("reviewer", url, {}).status_code == 422
    assert api.post("auditor", url, {"reason": "no"}).status_code == 403
    done = api.post("reviewer", url, {"reason": "QA failed"})
    assert done.status_code == 202, done.content
    assert done.json() | {"answer_id": 0} == {
        "answer_id": 0, "interrupt_id": interrupt.pk, "run_id": interrupt.run_id,
        "thread_id": interrupt.root_thread_id, "reason": "QA failed", "status": "cancelling"}
    again = api.post("supervisor", url, {"reason": "me too"})
    assert again.status_code == 409 and again.json()["answered_by"] == "reviewer"
    assert Run.objects.get(pk=interrupt.run_id).status == "cancelled"
    assert lines(ledger) == []


def test_api_run_cancel_with_a_reason_at_a_breakpoint(users: dict[str, User],
                                                     ledger: Path) -> None:
    api = Api(users)
    interrupt = paused_before_ship(users, ledger)
    url = f"/api/runs/{interrupt.run_id}/cancel"
    assert api.post("supervisor", url, {"reason": ""}).status_code == 422
    assert api.post("supervisor", url, {"reason": "x" * 4001}).status_code == 422
    assert api.post("supervisor", url, {"reason": "release frozen"}).status_code == 202
    answer = Answer.objects.get(interrupt=interrupt)
    assert answer.kind == AnswerKind.CANCEL and answer.reason == "release frozen"
    assert answer.user == users["supervisor"]
    assert AuditEntry.objects.get(action="run.cancel").detail == {"reason": "release frozen"}
    assert Run.objects.get(pk=interrupt.run_id).status == "cancelled"
    assert lines(ledger) == []


def test_api_run_cancel_without_a_body_as_before(users: dict[str, User], ledger: Path) -> None:
    api = Api(users)
    interrupt = paused_before_ship(users, ledger)
    response = api.post("supervisor", f"/api/runs/{interrupt.run_id}/cancel", raw=b"")
    assert response.status_code == 202, response.content
    assert Run.objects.get(pk=interrupt.run_id).status == "cancelled"
    assert not Answer.objects.exists()  # no reason: a plain cancel, no decision recorded
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.CANCELLED
