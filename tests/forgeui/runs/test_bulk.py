"""Bulk answers: one value for many interrupts, each with its own compare-and-set,
reported row by row (accepted / stale with who answered / forbidden), never all-or-nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.db.models import Count
from django.test import Client

from forgeui.models import Answer, AuditEntry, Interrupt, InterruptStatus
from forgeui.runs import bulk, services
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import lines

pytestmark = pytest.mark.django_db(transaction=True)


def paused(users: dict[str, User], graph: str, n: int, **input: object) -> list[str]:
    ids = []
    for _ in range(n):
        started = services.start_run(users["supervisor"], graph, dict(input))
        ids.append(Interrupt.objects.of_tree(started.thread_id).pending().get().pk)
    return ids


def test_bulk_over_100_with_10_answered_meanwhile(users: dict[str, User], ledger: Path) -> None:
    ids = paused(users, "race", 100, ledger=str(ledger), amount=1)
    # The page was loaded, then someone else answered ten of the selected rows.
    for interrupt_id in ids[::10]:
        services.answer_interrupt(users["supervisor"], interrupt_id, "theirs")
    response = Api(users).post("reviewer", "/api/interrupts/bulk_resume",
                               {"ids": ids, "value": "mine", "steering": "batch of 100"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == 100 and body["accepted"] == 90
    outcomes = {item["interrupt_id"]: item for item in body["items"]}
    assert [item["interrupt_id"] for item in body["items"]] == ids  # in the given order
    for interrupt_id in ids[::10]:
        stale = outcomes[interrupt_id]
        assert stale["outcome"] == "stale" and stale["answered_by"] == "supervisor"
        assert "already answered by supervisor" in stale["detail"]
    # Nothing applied twice: one answer per interrupt, one payment per run.
    assert Answer.objects.count() == 100
    assert not Answer.objects.values("interrupt").annotate(n=Count("id")).filter(
        n__gt=1).exists()
    paid = lines(ledger)
    assert len(paid) == 100
    assert sum("answer=mine" in line for line in paid) == 90
    assert Interrupt.objects.filter(pk__in=ids, status=InterruptStatus.PENDING).count() == 0
    assert AuditEntry.objects.filter(action="answer").count() == 100
    assert AuditEntry.objects.filter(action="answer.refused").count() == 10
    assert AuditEntry.objects.get(action="answer.bulk").detail["steering"] == "batch of 100"


def test_bulk_reports_forbidden_rows_and_answers_the_rest(users: dict[str, User]) -> None:
    bob = User.objects.create_user("bob", password="bob")
    bob.groups.add(Group.objects.get(name="reviewer"))
    mine = paused(users, "custom", 2)
    theirs = paused(users, "custom", 1, options={"assignees": {"users": ["bob"]}})
    outcomes = bulk.bulk_answer(users["reviewer"], [*mine, *theirs, "nope"], True)
    assert [o.outcome for o in outcomes] == ["accepted", "accepted", "forbidden", "not_found"]
    assert "assigned to bob" in outcomes[2].detail
    assert Interrupt.objects.get(pk=theirs[0]).status == InterruptStatus.PENDING


def test_bulk_by_filter_and_its_refusals(users: dict[str, User]) -> None:
    api = Api(users)
    ids = paused(users, "custom", 3)
    other = paused(users, "transfer", 1)
    response = api.post("reviewer", "/api/interrupts/bulk_resume",
                        {"filter": {"graph": "custom"}, "value": False})
    assert response.status_code == 200
    assert sorted(i["interrupt_id"] for i in response.json()["items"]) == sorted(ids)
    assert Interrupt.objects.get(pk=other[0]).status == InterruptStatus.PENDING
    both = api.post("reviewer", "/api/interrupts/bulk_resume",
                    {"ids": other, "filter": {}, "value": True})
    assert both.status_code == 422
    assert api.post("auditor", "/api/interrupts/bulk_resume",
                    {"ids": other, "value": True}).status_code == 403


def test_bulk_from_the_inbox_page(users: dict[str, User]) -> None:
    ids = paused(users, "custom", 3)
    client = Client()
    client.force_login(users["reviewer"])
    inbox = client.get("/").content.decode()
    assert f'name="ids" value="{ids[0]}"' in inbox and 'id="bulk-form"' in inbox
    response = client.post("/interrupts/bulk/", {"ids": ids[:2], "action": "approve",
                                                 "steering": "ok"},
                           headers={"HX-Request": "true"})
    text = response.content.decode()
    assert response.status_code == 200 and text.count("Approve?</a> → Approved") == 2
    assert Interrupt.objects.get(pk=ids[2]).status == InterruptStatus.PENDING
    everything = client.post("/interrupts/bulk/", {"all": "1", "query": "graph=custom",
                                                   "action": "reject"})
    assert everything.status_code == 200
    assert Answer.objects.get(interrupt_id=ids[2]).value is False
