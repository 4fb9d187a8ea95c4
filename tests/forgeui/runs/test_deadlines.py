"""Deadlines: a sweep answers overdue interrupts with their default (as the
system, with the reason audited) or marks them overdue and tells the supervisors.

Time is passed in (``now``), never slept.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone

from forgeui.models import Answer, AuditEntry, Interrupt, InterruptStatus, Run
from forgeui.runs import deadlines, services
from forgeui.scheduler import expire_interrupts_task
from forgeui.team import decision_links

pytestmark = pytest.mark.django_db(transaction=True)


def pause(users: dict[str, User], **options: object) -> Interrupt:
    started = services.start_run(users["supervisor"], "custom", {"options": options})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


def test_deadline_and_default_are_read_when_the_row_is_created(
        users: dict[str, User]) -> None:
    interrupt = pause(users, deadline_s=60, default="skip")
    assert interrupt.has_default and interrupt.default == "skip"
    assert interrupt.deadline_at == interrupt.created_at + timedelta(seconds=60)
    plain = pause(users)
    assert plain.deadline_at is None and not plain.has_default


def test_a_deadline_with_a_default_is_answered_by_the_system(users: dict[str, User]) -> None:
    interrupt = pause(users, deadline_s=60, default="skip")
    assert deadlines.expire_interrupts(now=interrupt.created_at + timedelta(seconds=59)) == []
    [expiry] = deadlines.expire_interrupts(now=interrupt.created_at + timedelta(seconds=61))
    assert expiry.outcome == "defaulted"
    row = Interrupt.objects.get(pk=interrupt.pk)
    assert row.status == InterruptStatus.ANSWERED and row.answered_by is None
    answer = Answer.objects.get(interrupt=interrupt)
    assert answer.user is None and answer.value == "skip" and answer.applied_at is not None
    run = Run.objects.get(pk=interrupt.run_id)
    assert run.status == "completed" and run.output == "skip"
    entry = AuditEntry.objects.get(action="interrupt.expired")
    assert entry.actor is None and "answered with its default" in entry.detail["reason"]
    assert deadlines.expire_interrupts(now=timezone.now() + timedelta(days=1)) == []


@override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend")
def test_a_deadline_without_a_default_is_flagged_and_supervisors_hear(
        users: dict[str, User]) -> None:
    users["supervisor"].email = "sup@example.com"
    users["supervisor"].save()
    interrupt = pause(users, deadline_s=5)
    later = interrupt.created_at + timedelta(seconds=6)
    [expiry] = deadlines.expire_interrupts(now=later)
    assert expiry.outcome == "overdue"
    row = Interrupt.objects.get(pk=interrupt.pk)
    assert row.status == InterruptStatus.PENDING and row.overdue_at == later
    assert "no default" in AuditEntry.objects.get(action="interrupt.overdue").detail["reason"]
    [message] = mail.outbox
    assert message.to == ["sup@example.com"] and interrupt.pk in message.subject
    link = decision_links.read(message.body.split("/links/")[1].split("/")[0])
    assert (link.user_id, link.interrupt_id) == (users["supervisor"].pk, interrupt.pk)
    assert deadlines.expire_interrupts(now=later + timedelta(hours=1)) == []  # flagged once
    client = Client()
    client.force_login(users["reviewer"])
    assert "tag-overdue" in client.get("/").content.decode()


def test_the_task_and_the_command_sweep(users: dict[str, User]) -> None:
    past = pause(users, deadline_s=0, default=True)
    assert expire_interrupts_task.enqueue().return_value["handled"] == [
        {"interrupt_id": past.pk, "outcome": "defaulted"}]
    pause(users, deadline_s=0)
    from io import StringIO

    out = StringIO()
    call_command("expire_interrupts", stdout=out)
    assert out.getvalue().startswith("overdue ")


def test_the_inbox_sorts_by_deadline_and_shows_time_left(users: dict[str, User]) -> None:
    late = pause(users, deadline_s=3600)
    soon = pause(users, deadline_s=60)
    none = pause(users)
    client = Client()
    client.force_login(users["reviewer"])
    page = client.get("/?sort=deadline").content.decode()
    assert page.index(soon.pk) < page.index(late.pk) < page.index(none.pk)
    assert "data-due" in page and "due in" in page


def test_a_forwarded_payload_cannot_set_its_own_deadline_or_default(
        users: dict[str, User]) -> None:
    """The payload a graph forwards from a user or a model is data: these keys used to
    make the sweep answer it with no human."""
    started = services.start_run(users["supervisor"], "custom", {"payload": {
        "deadline_s": 0, "default": {"approved": True}}})
    interrupt = Interrupt.objects.of_tree(started.thread_id).pending().get()
    assert interrupt.deadline_at is None and not interrupt.has_default
    assert expire_interrupts_task.enqueue().return_value["handled"] == []
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.PENDING
    assert not Answer.objects.filter(interrupt=interrupt).exists()
