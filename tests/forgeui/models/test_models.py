"""Model rules that do not need a run: the append-only audit log, roles, readable rows."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from forgeui import models
from forgeui.models import AppendOnly, AuditEntry

pytestmark = pytest.mark.django_db


def test_audit_entries_cannot_be_changed_or_deleted() -> None:
    entry = AuditEntry.objects.create(action="run.start", thread_id="t")
    entry.action = "something else"
    with pytest.raises(AppendOnly):
        entry.save()
    with pytest.raises(AppendOnly):
        entry.delete()
    with pytest.raises(AppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(action="x")
    with pytest.raises(AppendOnly):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get().action == "run.start"


def test_the_roles_exist_and_may_view_everything() -> None:
    viewable = {f"view_{m._meta.model_name}" for m in (models.Run, models.Checkpoint,
                                                       models.Interrupt, models.AuditEntry)}
    for name in ("reviewer", "supervisor", "auditor"):
        codenames = set(Group.objects.get(name=name).permissions.values_list("codename",
                                                                             flat=True))
        assert viewable <= codenames
        assert not any(c.startswith(("change_", "delete_", "add_")) for c in codenames)


def test_every_model_reads_well() -> None:
    thread = models.Thread(thread_id="t", latest_checkpoint_id="c")
    run = models.Run(run_id="r", namespace=["transfer", "agent"], status="interrupted")
    interrupt = models.Interrupt(id="i", run=run, node="ask", namespace=["transfer"])
    answer = models.Answer(interrupt=interrupt)
    rows = [
        thread, run, interrupt, answer,
        models.Checkpoint(id="c", thread=thread, seq=3, node="ask", status="interrupted"),
        models.SteeringNote(run=run, text="be brief"),
        models.AuditEntry(action="answer"), models.Event(id=7, kind="run.updated"),
    ]
    assert [str(row) for row in rows[:4]] == [
        "t", "transfer/agent (interrupted)", "transfer:ask#0 (pending)",
        "answer to i by system"]
    assert all(str(row) for row in rows)
