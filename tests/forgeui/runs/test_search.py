"""Search: payloads and run inputs, PostgreSQL full-text or SQLite's fallback."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Interrupt, Run
from forgeui.runs import services
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)


def pause(users: dict[str, User], **input: object) -> str:
    started = services.start_run(users["supervisor"], "custom", input)
    return Interrupt.objects.of_tree(started.thread_id).pending().get().pk


def test_search_payloads_and_inputs_in_the_api_and_the_inbox(users: dict[str, User]) -> None:
    invoice = pause(users, question="Pay the ACME invoice?")
    refund = pause(users, question="Refund?", customer="Globex")
    pause(users, question="Something else")
    api = Api(users)
    found = api.get("reviewer", "/api/interrupts", status="pending", q="acme invoice")
    assert [i["id"] for i in found.json()["items"]] == [invoice]
    by_input = api.get("reviewer", "/api/interrupts", q="globex").json()["items"]
    assert [i["id"] for i in by_input] == [refund]
    client = Client()
    client.force_login(users["reviewer"])
    page = client.get("/", {"q": "ACME"}).content.decode()
    assert invoice in page and refund not in page and "matching the filters" in page


def make(alias: str, payload: object, input: object) -> str:
    run = Run.objects.using(alias).create(
        run_id=uuid.uuid4().hex, thread_id="t", root_thread_id="t", status="interrupted",
        latest_checkpoint_id="c", input=input, graph="g")
    return Interrupt.objects.using(alias).create(
        id=uuid.uuid4().hex, run=run, thread_id="t", root_thread_id="t", node="n",
        task_id="k", checkpoint_id="c", payload=payload).pk


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
def test_postgres_uses_full_text_search() -> None:
    transfers = make("postgres", {"question": "Approve the transfers?"}, {"amount": 5})
    wire = make("postgres", {"question": "Anything"}, {"note": "urgent wire to Zurich"})
    make("postgres", {"question": "Approve the deploy?"}, None)
    found = Interrupt.objects.using("postgres")
    assert list(found.search("transfer").values_list("id", flat=True)) == [transfers]  # stem
    assert list(found.search("zurich -deploy").values_list("id", flat=True)) == [wire]
    assert found.search('"approve the"').count() == 2
