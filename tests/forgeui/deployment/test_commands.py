"""The management commands, run as they are from a shell."""

from __future__ import annotations

import json
import re
import secrets
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.core.management.base import SystemCheckError
from django.utils import timezone

from forgeui.demo.accounts import check_demo_passwords
from forgeui.management.commands.demo import ACCOUNTS, ADMIN_ACCOUNT, DEMO_INPUTS
from forgeui.models import Answer, AuditEntry, Interrupt, Run, SteeringNote
from forgeui.runs import services
from forgeui.runs.tasks import (
    apply_answer_task,
    apply_steering_task,
    cancel_run_task,
    start_run_task,
)
from forgeui.store import DjangoCheckpointStore

pytestmark = pytest.mark.django_db(transaction=True)


def command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def password_works(username: str, password: str) -> bool:
    return User.objects.get(username=username).check_password(password)


def test_demo_creates_the_accounts_and_a_paused_run_per_demo_graph() -> None:
    out = command("demo")
    for username, password in [*ACCOUNTS.items(), ADMIN_ACCOUNT]:
        assert password_works(username, password), username
        assert f"{username:<10} password: {password}" in out
    assert User.objects.get(username="auditor").is_staff
    roots = Run.objects.roots()
    # One run per demo graph, and one approval request from the demo agent.
    assert sorted(roots.values_list("graph", flat=True)) == sorted([*DEMO_INPUTS,
                                                                    "forge.request"])
    assert set(roots.values_list("status", flat=True)) == {"interrupted"}
    assert Interrupt.objects.pending().count() >= len(DEMO_INPUTS) + 1

    again = command("demo")  # repeatable: `make run` calls it every time
    assert again.count("already there") == len(DEMO_INPUTS)
    assert Run.objects.roots().count() == len(DEMO_INPUTS) + 1


def test_start_run_prints_json() -> None:
    printed = json.loads(command("start_run", "pipeline", "--input", '{"n": 1}'))
    assert printed["status"] == "completed"
    run = Run.objects.get(pk=printed["run_id"])
    assert run.thread_id == printed["thread_id"] and run.output == {
        "n": 1, "step": "one", "finished": True}


def test_start_run_refuses_bad_input_and_unknown_graphs() -> None:
    with pytest.raises(CommandError, match="not JSON"):
        command("start_run", "pipeline", "--input", "{nope")
    with pytest.raises(CommandError, match="unknown graph"):
        command("start_run", "nope")


def test_recover_runs_retries_failed_runs_and_unapplied_answers(tmp_path: Path) -> None:
    # The race graph pays into a ledger whose directory does not exist yet: once it is
    # answered, its pay node fails.
    order = {"ledger": str(tmp_path / "missing" / "ledger"), "amount": 1}
    failing = json.loads(command("start_run", "race", "--input", json.dumps(order)))
    interrupt = Interrupt.objects.get(run_id=failing["run_id"])
    answer = Answer.objects.create(interrupt=interrupt, value="yes")  # accepted, never applied
    Interrupt.objects.filter(pk=interrupt.pk).update(status="answered")

    assert "0 run(s), 0 start(s), 0 answer(s)" in command("recover_runs")  # none old enough
    out = command("recover_runs", "--older-than", "0", "--dry-run")
    assert f"apply answer {answer.pk}" in out and Answer.objects.get().applied_at is None

    out = command("recover_runs", "--older-than", "0")
    run = Run.objects.get(pk=failing["run_id"])
    assert run.status == "failed" and "No such file" in run.error["message"]
    assert Answer.objects.get().applied_at is not None

    (tmp_path / "missing").mkdir()
    out = command("recover_runs", "--older-than", "0")
    assert f"recover thread {run.thread_id}" in out
    run.refresh_from_db()
    assert run.status == "completed" and run.output["paid"] is True
    latest = DjangoCheckpointStore().load_sync(run.thread_id)
    assert latest is not None and latest.error is None


def lost_start(graph: str, data: Any, thread_id: str) -> str:
    """A start accepted as ``services.start_run`` accepts one, whose task never ran (a
    worker killed as it took the job, a Redis restarted with it queued); its run id."""
    run_id = secrets.token_hex(16)
    services.audit(None, "run.start", object_type="thread", object_id=thread_id,
                   thread_id=thread_id, run_id=run_id,
                   detail={"graph": graph, "input": data, "request_id": run_id})
    return run_id


def test_recover_runs_begins_a_start_whose_task_was_lost() -> None:
    lost = lost_start("pipeline", {"n": 7}, "lost-thread")
    begun = json.loads(command("start_run", "pipeline", "--input", '{"n": 1}'))
    # Accepted as its thread's first start, then refused: another start began it first.
    refused = lost_start("pipeline", {"n": 2}, "taken-thread")
    taken = json.loads(command("start_run", "pipeline", "--input", '{"n": 3}',
                               "--thread-id", "taken-thread"))
    assert not Run.objects.filter(pk__in=[lost, refused]).exists()
    assert Run.objects.filter(pk__in=[begun["run_id"], taken["run_id"]]).count() == 2

    out = command("recover_runs", "--older-than", "0", "--dry-run")
    assert f"start run {lost} (pipeline on thread lost-thread)" in out
    assert refused not in out and begun["run_id"] not in out and "1 start(s)" in out
    assert not Run.objects.filter(pk=lost).exists()

    out = command("recover_runs", "--older-than", "0")
    assert "1 start(s)" in out
    run = Run.objects.get(pk=lost)  # the run id the caller was given, on its thread
    assert (run.thread_id, run.status, run.output["n"]) == ("lost-thread", "completed", 7)
    assert "0 run(s), 0 start(s), 0 answer(s)" in command("recover_runs", "--older-than", "0")
    assert AuditEntry.objects.filter(action="run.start", run_id=lost).count() == 1
    # The original task, delivered late after all, finds its start done.
    late = start_run_task.call("pipeline", "lost-thread", lost)
    assert late["duplicate"] is True and Run.objects.filter(thread_id="lost-thread").count() == 1


def test_recover_runs_applies_a_lost_steering_note_and_a_lost_cancel(tmp_path: Path) -> None:
    order = {"ledger": str(tmp_path / "ledger"), "amount": 1}
    steered, doomed, finished = (json.loads(command("start_run", "race", "--input",
                                                    json.dumps(order)))["run_id"]
                                 for _ in range(3))
    # Paying into a ledger whose directory does not exist fails the run once answered.
    broken = json.loads(command("start_run", "race", "--input", json.dumps(
        {**order, "ledger": str(tmp_path / "missing" / "ledger")})))["run_id"]
    answer = Answer.objects.create(interrupt=Interrupt.objects.get(run_id=broken), value="yes")
    apply_answer_task.call(answer.pk)
    assert Run.objects.get(pk=broken).status == "failed"
    # Accepted as services.add_steering_note and services.cancel_run accept them, their
    # tasks never ran; a note that came with an answer goes with the answer, not here.
    note = SteeringNote.objects.create(run_id=steered, text="pay the smaller invoice first")
    answered = Answer.objects.create(interrupt=Interrupt.objects.get(run_id=finished),
                                     value="yes", applied_at=timezone.now())
    SteeringNote.objects.create(run_id=finished, answer=answered, text="with the answer")
    for run_id in (doomed, doomed, broken, finished):  # asked twice; finished is not live
        services.audit(None, "run.cancel", object_type="run", object_id=run_id,
                       run_id=run_id)
    Run.objects.filter(pk=finished).update(status="completed")

    out = command("recover_runs", "--older-than", "0", "--dry-run")
    assert f"apply steering note {note.pk}" in out and f"cancel run {doomed}" in out, out
    assert f"cancel run {broken}" in out and finished not in out, out
    assert "1 note(s), 2 cancel(s)" in out, out
    out = command("recover_runs", "--older-than", "0")
    note.refresh_from_db()
    assert note.applied_at is not None and note.outcome == "applied"
    assert Run.objects.get(pk=doomed).status == "cancelled"
    assert Run.objects.get(pk=broken).status == "cancelled"
    assert Run.objects.get(pk=steered).status == "interrupted"
    latest = DjangoCheckpointStore().load_sync(Run.objects.get(pk=steered).thread_id)
    assert latest is not None and "pay the smaller invoice first" in json.dumps(latest.to_dict())
    assert "0 note(s), 0 cancel(s)" in command("recover_runs", "--older-than", "0")
    # The original tasks, delivered late after all, find their work done.
    assert apply_steering_task.call(note.pk)["outcome"] == "already applied"
    assert cancel_run_task.call(doomed)["outcome"].startswith("not cancelled")
    again = DjangoCheckpointStore().load_sync(latest.thread_id)
    assert again is not None and json.dumps(again.to_dict()).count("smaller invoice") == 1
    assert Run.objects.get(pk=doomed).status == "cancelled"


def test_recover_runs_does_not_begin_a_start_whose_thread_was_deleted() -> None:
    finished = json.loads(command("start_run", "pipeline", "--input", '{"n": 1}'))
    lost = lost_start("pipeline", {"n": 2}, "forgotten-thread")
    store = DjangoCheckpointStore()
    store.delete_thread(finished["thread_id"])  # its run row goes with it
    store.delete_thread("forgotten-thread")  # never begun: nothing stored but the start
    assert not Run.objects.filter(pk__in=[finished["run_id"], lost]).exists()

    assert "0 run(s), 0 start(s), 0 answer(s)" in command("recover_runs", "--older-than", "0")
    assert not Run.objects.exists()
    deleted = AuditEntry.objects.filter(action="thread.delete").values_list("thread_id",
                                                                            flat=True)
    assert sorted(deleted) == sorted([finished["thread_id"], "forgotten-thread"])

    # A start accepted after the deletion is a new one: it is begun.
    again = lost_start("pipeline", {"n": 3}, "forgotten-thread")
    assert "1 start(s)" in command("recover_runs", "--older-than", "0")
    assert Run.objects.get(pk=again).status == "completed"


def test_demo_is_refused_under_debug_0_without_force(settings: Any) -> None:
    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="refused under DEBUG=0"):
        command("demo", "--no-runs")
    assert not User.objects.exists()


def test_demo_with_force_generates_passwords_and_never_prints_a_known_one(
        settings: Any) -> None:
    settings.PRODUCTION = True
    out = command("demo", "--no-runs", "--force")
    for username, known in [*ACCOUNTS.items(), ADMIN_ACCOUNT]:
        assert known not in out
        assert not password_works(username, known)
        generated = re.search(rf"{username}\s+password: (\S+) \(generated\)", out)
        assert generated is not None, out
        assert password_works(username, generated.group(1))
    assert "password" not in command("demo", "--no-runs", "--force")  # nothing new to show


def test_the_deploy_check_fails_while_a_demo_account_keeps_its_known_password() -> None:
    command("demo", "--no-runs")
    found = {m.id: m for m in check_demo_passwords()}
    assert len(check_demo_passwords()) == len(ACCOUNTS) + 1 and set(found) == {"forgeui.E020"}
    for username in [*ACCOUNTS, ADMIN_ACCOUNT[0]]:
        user = User.objects.get(username=username)
        user.set_password(secrets.token_urlsafe(16))
        user.save()
    assert check_demo_passwords() == []
    with pytest.raises(SystemCheckError):  # and it is part of `check --deploy`
        User.objects.filter(username="auditor").delete()
        User.objects.create_user("auditor", password=ACCOUNTS["auditor"])
        call_command("check", "--deploy", "--tag", "security", "--fail-level", "ERROR",
                     stdout=StringIO(), stderr=StringIO())
