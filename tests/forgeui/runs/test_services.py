"""The services the API and pages call: start, answer (once), steer, fork, cancel.

Tasks run immediately here (``tests.settings``), in the thread whose transaction
committed, so each test sees the whole flow: request -> transaction -> task -> runtime.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import override_settings
from django_tasks import task_backends

from forgeui.models import (
    Answer,
    AuditEntry,
    Event,
    Interrupt,
    InterruptStatus,
    Run,
    SteeringNote,
)
from forgeui.runs import services
from forgeui.runs.exceptions import Forbidden, InvalidRequest, NotFound, StaleAnswer, UnknownGraph
from forgeui.runs.tasks import apply_answer_task, start_run_task
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.conftest import lines

pytestmark = pytest.mark.django_db(transaction=True)


def start(user: User, graph: str, input: Any) -> tuple[Run, list[Interrupt]]:
    started = services.start_run(user, graph, input)
    assert started.run_id is not None  # the immediate backend ran the task on commit
    run = Run.objects.get(pk=started.run_id)
    return run, list(Interrupt.objects.of_tree(run.root_thread_id).pending().order_by("node"))


def test_start_run_records_the_run_its_starter_and_an_audit_row(users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "transfer", {"amount": 5})
    assert started.status == "interrupted"
    run = Run.objects.get(pk=started.run_id)
    assert run.started_by == users["supervisor"]
    assert run.graph == "transfer" and run.namespace == ["transfer"]
    entry = AuditEntry.objects.get(action="run.start")
    assert entry.actor == users["supervisor"] and entry.thread_id == started.thread_id


QUEUED = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
          "notify": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def test_a_start_job_names_the_start_and_carries_no_input(users: dict[str, User]) -> None:
    secret = {"amount": 7, "note": "wire to DE89 3704 0044 0532 0130 00"}
    with override_settings(TASKS=QUEUED):
        started = services.start_run(users["supervisor"], "transfer", secret)
        [job] = task_backends["default"].results
    assert list(job.args) == ["transfer", started.thread_id, started.run_id] and not job.kwargs
    assert "DE89" not in json.dumps([job.args, job.kwargs])
    ran = start_run_task.call(*job.args)  # the worker reads the input the start recorded
    run = Run.objects.get(pk=ran["run_id"])
    assert (run.input, run.started_by) == (secret, users["supervisor"])
    assert start_run_task.call("transfer", "elsewhere", "no-such-start")["status"] == "unknown"


def test_start_run_refuses_unknown_graphs_and_non_json(users: dict[str, User]) -> None:
    with pytest.raises(UnknownGraph, match=r"registered graphs: .*transfer"):
        services.start_run(users["supervisor"], "nope", {})
    with pytest.raises(InvalidRequest, match="input must be JSON"):
        services.start_run(users["supervisor"], "transfer", {"when": object()})
    assert not AuditEntry.objects.exists()


def test_start_run_refuses_a_thread_with_a_live_run(users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "transfer", {})
    with pytest.raises(InvalidRequest, match="already has a interrupted run"):
        services.start_run(users["supervisor"], "transfer", {}, thread_id=started.thread_id)


def test_auditors_and_strangers_cannot_act(users: dict[str, User]) -> None:
    for name in ("auditor", "nobody"):
        with pytest.raises(Forbidden):
            services.start_run(users[name], "transfer", {})
    _run, (interrupt,) = start(users["supervisor"], "transfer", {})
    with pytest.raises(Forbidden):
        services.answer_interrupt(users["auditor"], interrupt.pk, True)
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.PENDING


def test_an_answer_is_recorded_then_applied(users: dict[str, User]) -> None:
    run, (interrupt,) = start(users["supervisor"], "transfer", {"amount": 5})
    answer = services.answer_interrupt(users["reviewer"], interrupt.pk, {"ok": True},
                                       steering="double-check the IBAN").made
    answer.refresh_from_db()
    assert answer.applied_at is not None and answer.outcome == "applied"
    run.refresh_from_db()
    assert run.status == "completed"
    assert run.output == {"input": {"amount": 5}, "approved": {"ok": True}, "done": True}
    interrupt.refresh_from_db()
    assert interrupt.status == "answered" and interrupt.answered_by == users["reviewer"]
    note = SteeringNote.objects.get()
    assert note.answer == answer and note.text == "double-check the IBAN"
    assert note.applied_at is not None
    # The note reached the runtime beside the answer, not inside it.
    cp = DjangoCheckpointStore().load_sync(run.thread_id)
    assert cp is not None and [n["text"] for n in cp.steering] == ["double-check the IBAN"]
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["run.start", "answer", "answer.applied"]
    kinds = set(Event.objects.values_list("kind", flat=True))
    assert {"interrupt.created", "interrupt.answered", "run.updated"} <= kinds


def test_answer_to_a_non_pending_interrupt_is_refused_with_only_an_audit_row(
    users: dict[str, User],
) -> None:
    run, (interrupt,) = start(users["supervisor"], "transfer", {})
    services.answer_interrupt(users["reviewer"], interrupt.pk, True)
    counts = (Answer.objects.count(), SteeringNote.objects.count(), Event.objects.count(),
              AuditEntry.objects.count())

    with pytest.raises(StaleAnswer) as refused:
        services.answer_interrupt(users["supervisor"], interrupt.pk, False, steering="no!")

    stale = refused.value
    assert stale.answered_by == "reviewer" and stale.answered_at is not None
    assert stale.status == "answered"
    assert stale.latest["run_id"] == run.run_id and stale.latest["status"] == "completed"
    assert stale.latest["checkpoint_id"] == Run.objects.get(pk=run.pk).latest_checkpoint_id
    assert (Answer.objects.count(), SteeringNote.objects.count(), Event.objects.count(),
            AuditEntry.objects.count() - 1) == counts
    entry = AuditEntry.objects.order_by("-id").first()
    assert entry is not None and entry.action == "answer.refused"
    assert entry.actor == users["supervisor"] and entry.detail["answered_by"] == "reviewer"


def test_an_outdated_expected_checkpoint_is_refused(users: dict[str, User]) -> None:
    run, (interrupt,) = start(users["supervisor"], "transfer", {})
    with pytest.raises(StaleAnswer, match="moved on") as refused:
        services.answer_interrupt(users["reviewer"], interrupt.pk, True,
                                  expected_checkpoint_id="an-old-one")
    assert refused.value.status == "pending" and refused.value.answered_by is None
    assert Interrupt.objects.get(pk=interrupt.pk).status == "pending"
    services.answer_interrupt(users["reviewer"], interrupt.pk, True,
                              expected_checkpoint_id=interrupt.checkpoint_id)
    assert Run.objects.get(pk=run.pk).status == "completed"


def test_two_answers_to_one_thread_arriving_together_are_both_applied(
    users: dict[str, User],
) -> None:
    run, interrupts = start(users["supervisor"], "parallel", {"amount": 3})
    assert [i.node for i in interrupts] == ["finance", "legal"]
    values = {"finance": {"approved": True}, "legal": "ok"}
    barrier = threading.Barrier(len(interrupts))
    errors: list[BaseException] = []

    def answer(interrupt: Interrupt, user: User) -> None:
        try:
            barrier.wait()
            services.answer_interrupt(user, interrupt.pk, values[interrupt.node])
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=answer, args=(i, u))
               for i, u in zip(interrupts, [users["reviewer"], users["supervisor"]], strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    run.refresh_from_db()
    assert run.status == "completed", run.error
    assert run.output == {"signoffs": values}
    assert Answer.objects.unapplied().count() == 0
    assert Interrupt.objects.of_tree(run.root_thread_id).pending().count() == 0


def test_a_duplicated_apply_task_never_applies_twice(users: dict[str, User], ledger: Path) -> None:
    _run, (interrupt,) = start(users["supervisor"], "race", {"ledger": str(ledger), "amount": 7})
    answer = services.answer_interrupt(users["reviewer"], interrupt.pk, "yes").made
    assert lines(ledger) == ["paid 7 answer=yes"]
    assert apply_answer_task.call(answer.pk)["outcome"] == "already applied"
    # As if the first delivery applied it but died before marking it.
    Answer.objects.filter(pk=answer.pk).update(applied_at=None)
    assert apply_answer_task.call(answer.pk)["outcome"] == "applied"
    assert lines(ledger) == ["paid 7 answer=yes"]


def test_answers_are_checked_against_the_interrupts_schema(users: dict[str, User]) -> None:
    _run, interrupts = start(users["supervisor"], "parallel", {})
    finance = next(i for i in interrupts if i.node == "finance")
    with pytest.raises(InvalidRequest, match="schema"):
        services.answer_interrupt(users["reviewer"], finance.pk, {"approve": "typo"})
    with pytest.raises(InvalidRequest, match="child_policy"):
        services.answer_interrupt(users["reviewer"], finance.pk, {"approved": True},
                                  child_policy="explode")
    with pytest.raises(NotFound):
        services.answer_interrupt(users["reviewer"], "no-such-interrupt", 1)
    assert Interrupt.objects.get(pk=finance.pk).status == "pending"


def test_resume_map_accepts_all_or_nothing(users: dict[str, User]) -> None:
    run, interrupts = start(users["supervisor"], "parallel", {})
    by_node = {i.node: i.pk for i in interrupts}
    services.answer_interrupt(users["reviewer"], by_node["legal"], "ok")
    with pytest.raises(StaleAnswer):
        services.resume_map(users["reviewer"], run.thread_id,
                            {by_node["finance"]: {"approved": True}, by_node["legal"]: "again"})
    assert Interrupt.objects.get(pk=by_node["finance"]).status == "pending"
    services.resume_map(users["reviewer"], run.thread_id, {by_node["finance"]: {"approved": 1}})
    assert Run.objects.get(pk=run.pk).status == "completed"


def test_supervisor_steers_and_answers_one_sub_agent(users: dict[str, User]) -> None:
    run, interrupts = start(users["supervisor"], "supervisor", {"topic": "Q3"})
    research = next(i for i in interrupts if i.sub_agent_id == "research_agent")
    note = services.add_steering_note(users["supervisor"], research.run_id, "prefer the ledger")
    note.refresh_from_db()
    assert note.outcome == "applied"
    services.answer_interrupt(users["supervisor"], research.pk, {"type": "accept", "args": None})
    child = Run.objects.get(pk=research.run_id)
    assert child.status == "completed" and child.parent_run_id == run.run_id
    assert child.output["steering"] == ["prefer the ledger"]
    writer = Interrupt.objects.get(sub_agent_id="writer_agent")
    assert writer.status == "pending"  # the sibling stays paused
    assert Run.objects.get(pk=run.pk).status == "interrupted"


def test_fork_copies_the_thread_and_audits_it(users: dict[str, User]) -> None:
    run, (interrupt,) = start(users["supervisor"], "transfer", {"amount": 1})
    new_thread = services.fork_thread(users["supervisor"], run.thread_id)
    forked = Run.objects.get(thread_id=new_thread)
    assert forked.run_id != run.run_id and forked.status == "interrupted"
    fork_interrupt = Interrupt.objects.get(root_thread_id=new_thread)
    services.answer_interrupt(users["reviewer"], fork_interrupt.pk, False)
    assert Run.objects.get(pk=forked.pk).output["approved"] is False
    assert Interrupt.objects.get(pk=interrupt.pk).status == "pending"  # original untouched
    assert AuditEntry.objects.filter(action="thread.fork", thread_id=run.thread_id).exists()


def test_cancel_ends_the_run_and_its_interrupts(users: dict[str, User]) -> None:
    run, _interrupts = start(users["supervisor"], "supervisor", {})
    services.cancel_run(users["supervisor"], run.run_id)
    assert Run.objects.get(pk=run.pk).status == "cancelled"
    statuses = set(Interrupt.objects.of_tree(run.root_thread_id).values_list("status", flat=True))
    assert statuses == {"cancelled"}
    with pytest.raises(InvalidRequest, match="cancelled"):
        services.cancel_run(users["supervisor"], run.run_id)
    assert AuditEntry.objects.filter(action="run.cancel").count() == 1
