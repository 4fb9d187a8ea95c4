"""Auditors read decisions in words: what was asked (the summary) and what was decided,
on the decisions list, its exports, the audit log, the timeline and the interrupt page."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from forgeui.models import Interrupt
from forgeui.runs import services
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)

TRANSFER = {"question": "Approve this transfer?",
            "payload": {"amount": "500 EUR", "payee": "ACME", "iban": "DE89370400440532013000"},
            "options": {"summary": ["amount", "payee"]}}
ASKED = "Approve this transfer? · amount 500 EUR · payee ACME"
EMAIL = {"to": "dana@example.com", "subject": "About the delay", "body": "Hello"}


def pending_of(users: dict[str, User], graph: str, given: Any) -> Interrupt:
    thread = services.start_run(users["supervisor"], graph, given).thread_id
    (pending,) = Interrupt.objects.of_tree(thread).pending()
    return pending


def decided(users: dict[str, User]) -> dict[str, Interrupt]:
    """Two marked transfers (approved; rejected with a reason), a deploy breakpoint passed,
    and an e-mail edited before sending."""
    done = {"approved": pending_of(users, "custom", TRANSFER),
            "rejected": pending_of(users, "custom", TRANSFER),
            "deploy": pending_of(users, "deploy", {"version": "2.4.0"}),
            "email": pending_of(users, "email", {"to": "dana@example.com",
                                                 "topic": "the delay"})}
    reviewer = users["reviewer"]
    services.answer_interrupt(reviewer, done["approved"].pk, True)
    services.answer_interrupt(reviewer, done["rejected"].pk, False, steering="over budget")
    services.answer_interrupt(users["supervisor"], done["deploy"].pk, True)
    edited = {**done["email"].payload["args"], "to": "lead@example.com"}
    services.answer_interrupt(reviewer, done["email"].pk, {"type": "edit", "args": edited})
    return done


def streamed(response: Any) -> str:
    return b"".join(response.streaming_content).decode()


def without_json_toggles(html: str) -> str:
    return re.sub(r'<details class="json-toggle">.*?</details>', "", html, flags=re.S)


def test_the_decisions_list_says_what_was_asked_and_decided(users: dict[str, User]) -> None:
    decided(users)
    page = logged_in(users["auditor"]).get("/audit/decisions/").content.decode()
    assert page.count(ASKED) == 2
    assert "→ Approved" in page and "→ Rejected: over budget" in page
    assert "Paused before deploy · version 2.4.0" in page and "→ Continued" in page
    assert "→ Edited: to → lead@example.com" in page
    shown = without_json_toggles(page)
    assert "→ true" not in shown and "&quot;kind&quot;" not in shown
    assert "&quot;type&quot;: &quot;edit&quot;" not in shown
    assert page.count('<details class="json-toggle"><summary>JSON') == 4
    assert "&quot;type&quot;: &quot;edit&quot;" in page  # the exact value, behind the toggle


def test_decision_exports_carry_the_summary_and_the_words(users: dict[str, User]) -> None:
    done = decided(users)
    client = logged_in(users["auditor"])
    rows = {r["interrupt_id"]: r for r in csv.DictReader(
        io.StringIO(streamed(client.get("/audit/decisions/export.csv"))))}
    approved, rejected = rows[done["approved"].pk], rows[done["rejected"].pk]
    assert approved["summary"] == ASKED and approved["answer_text"] == "Approved"
    assert approved["decision"] == f"{ASKED} → Approved" and approved["answer"] == "true"
    assert rejected["decision"] == f"{ASKED} → Rejected: over budget"
    assert rows[done["deploy"].pk]["decision"].startswith("Paused before deploy · version 2.4.0")
    assert not any(r["decision"].endswith(("→ true", "→ false")) for r in rows.values())
    items = json.loads(streamed(client.get("/audit/decisions/export.json")))["items"]
    email = next(i for i in items if i["interrupt_id"] == done["email"].pk)
    assert email["answer_text"] == "Edited: to → lead@example.com"
    assert email["answer"]["type"] == "edit"


def test_the_audit_log_says_what_was_decided(users: dict[str, User]) -> None:
    done = decided(users)
    client = logged_in(users["auditor"])
    page = client.get("/audit/", {"action": "answer"}).content.decode()
    assert f"{ASKED} → Approved" in page and f"{ASKED} → Rejected: over budget" in page
    assert "→ true" not in page
    rows = list(csv.DictReader(io.StringIO(streamed(client.get("/audit/export.csv")))))
    answers = {r["object_id"]: r for r in rows if r["action"] == "answer"}
    assert answers[done["approved"].pk]["summary"] == f"{ASKED} → Approved"
    assert answers[done["email"].pk]["summary"].endswith("→ Edited: to → lead@example.com")
    started = [r["summary"] for r in rows if r["action"] == "run.start"]
    assert "Started deploy · version 2.4.0" in started
    applied = [r for r in rows if r["action"] == "answer.applied"]
    assert f"{ASKED} (answer applied; the run is completed)" in [r["summary"] for r in applied]


def test_the_audit_log_says_a_thread_was_deleted(users: dict[str, User]) -> None:
    done = decided(users)
    DjangoCheckpointStore().delete_thread(done["approved"].thread_id)
    page = logged_in(users["auditor"]).get("/audit/", {"action": "thread.delete"})
    assert "Deleted the thread, its checkpoints and its runs" in page.content.decode()
    assert done["approved"].thread_id in page.content.decode()


def test_a_refused_answer_is_audited_in_words(users: dict[str, User]) -> None:
    done = decided(users)
    with pytest.raises(services.StaleAnswer):
        services.answer_interrupt(users["supervisor"], done["approved"].pk, False)
    page = logged_in(users["auditor"]).get("/audit/", {"action": "answer.refused"})
    assert (f"{ASKED} → Rejected (not recorded: already answered by reviewer)"
            in page.content.decode())


def test_the_timeline_shows_summaries_not_whole_payloads(users: dict[str, User]) -> None:
    done = decided(users)
    page = logged_in(users["auditor"]).get(f"/threads/{done['email'].thread_id}/")
    html = page.content.decode()
    assert "Send this e-mail to dana@example.com?" in html
    assert "→ <strong class=\"answer-text\">Edited: to → lead@example.com</strong>" in html
    shown = without_json_toggles(html)
    assert "answer_schema" not in shown and "answer_schema" in html


def test_the_interrupt_page_shows_the_answer_in_words(users: dict[str, User]) -> None:
    done = decided(users)
    html = logged_in(users["auditor"]).get(f"/interrupts/{done['rejected'].pk}/")
    answers = html.content.decode().split('<ul class="answers">', 1)[1].split("</ul>", 1)[0]
    assert "Rejected: over budget" in answers
    assert "false" not in without_json_toggles(answers) and "false" in answers


def test_bulk_results_name_rows_by_summary_in_plain_words(users: dict[str, User]) -> None:
    fresh = pending_of(users, "custom", TRANSFER)
    taken = pending_of(users, "custom", {**TRANSFER, "question": "Pay the invoice?"})
    email = pending_of(users, "email", {"to": "dana@example.com", "topic": "the delay"})
    services.answer_interrupt(users["supervisor"], taken.pk, True)
    response = logged_in(users["reviewer"]).post(
        "/interrupts/bulk/", {"ids": [fresh.pk, taken.pk, email.pk], "action": "approve"},
        HTTP_HX_REQUEST="true")
    html = response.content.decode()
    items = re.findall(r"<li [^>]*>(.*?)</li>", html, flags=re.S)
    texts = [re.sub(r"<[^>]+>", "", item) for item in items]
    assert texts == [
        f"{ASKED} → Approved",
        "Pay the invoice? · amount 500 EUR · payee ACME → Not answered: already answered "
        "by supervisor",
        "Send this e-mail to dana@example.com? · to dana@example.com · subject About the "
        "delay · body Hello, → Not answered: needs a specific answer, open it",
    ]
    assert "1 of 3 answered" in html
    for interrupt in (fresh, taken, email):
        assert interrupt.pk[:8] not in re.sub(r'(href|data-interrupt)="[^"]*"', "", html)
    assert "schema" not in html and "$" not in html
