"""The auditor's view: answered interrupts without knowing ids, linked ids, CSV beside JSON."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User

from forgeui.models import AuditEntry, Interrupt
from forgeui.runs import services
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)


def streamed(response: Any) -> str:
    assert response.streaming, "exports are streamed"
    return b"".join(response.streaming_content).decode()


def answered(users: dict[str, User]) -> dict[str, Interrupt]:
    """A transfer approved by the reviewer, a deploy rejected by the supervisor, and one
    parallel_approvals left pending."""
    done = {}
    for graph, who, value, note in (("transfer", "reviewer", True, "amount checked"),
                                    ("deploy", "supervisor", False, "freeze week")):
        thread = services.start_run(users["supervisor"], graph, {}).thread_id
        (pending,) = Interrupt.objects.of_tree(thread).pending()
        services.answer_interrupt(users[who], pending.pk, value, steering=note)
        done[graph] = Interrupt.objects.get(pk=pending.pk)
    services.start_run(users["supervisor"], "parallel_approvals", {})
    return done


def test_auditors_list_decisions_with_filters_and_search(users: dict[str, User]) -> None:
    done = answered(users)
    client = logged_in(users["auditor"])
    page = client.get("/audit/decisions/").content.decode()
    assert "<strong>2</strong> decisions" in page
    assert "amount checked" in page and "freeze week" in page
    assert "Approve this transfer?" in page
    assert f'href="/interrupts/{done["transfer"].pk}/"' in page
    assert f'href="/checkpoints/{done["transfer"].checkpoint_id}/"' in page
    mine = client.get("/audit/decisions/", {"who": "reviewer"}).content.decode()
    assert "<strong>1</strong> decision ·" in mine and "amount checked" in mine
    found = client.get("/audit/decisions/", {"q": "freeze"}).content.decode()
    assert "<strong>1</strong> decision ·" in found and "deploy" in found
    by_question = client.get("/audit/decisions/", {"q": "transfer"}).content.decode()
    assert "<strong>1</strong> decision ·" in by_question and "amount checked" in by_question
    graph = client.get("/audit/decisions/", {"graph": "deploy", "node": "deploy"})
    assert "<strong>1</strong> decision ·" in graph.content.decode()
    later = client.get("/audit/decisions/", {"since": "2999-01-01"}).content.decode()
    assert "<strong>0</strong> decisions" in later


def test_decisions_export_as_streamed_csv_and_json(users: dict[str, User]) -> None:
    done = answered(users)
    client = logged_in(users["auditor"])
    response = client.get("/audit/decisions/export.csv", {"who": "supervisor"})
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="decisions.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(streamed(response))))
    assert len(rows) == 1
    assert rows[0]["answered_by"] == "supervisor" and rows[0]["answer"] == "false"
    assert rows[0]["steering"] == "freeze week" and rows[0]["graph"] == "deploy"
    assert rows[0]["interrupt_id"] == done["deploy"].pk
    body = json.loads(streamed(client.get("/audit/decisions/export.json")))
    assert body["count"] == 2
    assert {item["answered_by"] for item in body["items"]} == {"reviewer", "supervisor"}


def test_the_audit_log_links_its_ids_and_exports_csv(users: dict[str, User]) -> None:
    done = answered(users)
    client = logged_in(users["auditor"])
    page = client.get("/audit/", {"action": "answer"}).content.decode()
    entry = AuditEntry.objects.get(action="answer", object_id=done["transfer"].pk)
    assert f'href="/interrupts/{done["transfer"].pk}/"' in page
    assert f'href="/runs/{done["transfer"].run_id}/"' in page
    assert f'href="/checkpoints/{entry.before_checkpoint_id}/"' in page
    assert 'href="/audit/export.csv?action=answer"' in page
    jump = client.get(f"/checkpoints/{entry.before_checkpoint_id}/")
    assert jump.status_code == 302
    assert jump["Location"] == (f"/threads/{done['transfer'].thread_id}/"
                                f"#cp-{entry.before_checkpoint_id}")
    assert client.get("/checkpoints/nope/").status_code == 404
    rows = list(csv.DictReader(io.StringIO(streamed(client.get("/audit/export.csv")))))
    assert len(rows) == AuditEntry.objects.count()
    answers = [r for r in rows if r["action"] == "answer"]
    assert {r["actor"] for r in answers} == {"reviewer", "supervisor"}
    assert json.loads(answers[0]["detail"])["steering"] in ("amount checked", "freeze week")


def test_done_by_me_shows_the_decision_and_when(users: dict[str, User]) -> None:
    done = answered(users)
    page = logged_in(users["reviewer"]).get("/", {"tab": "done"}).content.decode()
    row = page.split(f'id="int-{done["transfer"].pk}"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="decision">→ Approved · <time' in row and "true" not in row
    assert done["transfer"].answered_at.strftime("%Y-%m-%d") in row
    assert f'id="int-{done["deploy"].pk}"' not in page


FORMULAS = ["=HYPERLINK(\"http://evil.example/\",\"x\")", "+1+1", "-2+3", "@SUM(A1)",
            "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", FORMULAS)
def test_decision_cells_that_start_a_formula_are_neutralised(users: dict[str, User],
                                                             text: str) -> None:
    thread = services.start_run(users["supervisor"], "custom",
                                {"payload": {"question": text}}).thread_id
    (pending,) = Interrupt.objects.of_tree(thread).pending()
    services.answer_interrupt(users["reviewer"], pending.pk, text, steering=text)
    client = logged_in(users["auditor"])
    (row,) = csv.DictReader(io.StringIO(streamed(client.get("/audit/decisions/export.csv"))))
    assert row["steering"] == "'" + text.strip()  # notes are stored stripped
    assert row["answer_text"].startswith("'") or not row["answer_text"].startswith(
        ("=", "+", "-", "@", "\t", "\r"))
    every = [value for value in row.values() if value]
    assert not [v for v in every if v.startswith(("=", "+", "-", "@", "\t", "\r"))]
    # The JSON export keeps the exact text.
    body = json.loads(streamed(client.get("/audit/decisions/export.json")))
    assert body["items"][0]["steering"] == text.strip()


def test_an_audit_row_naming_a_formula_is_neutralised_in_the_csv(
        users: dict[str, User]) -> None:
    AuditEntry.objects.create(action="login.locked_out", object_type="login",
                              object_id="=HYPERLINK(\"http://evil.example/\")",
                              detail={"ip_address": "192.0.2.1"})
    client = logged_in(users["auditor"])
    rows = csv.DictReader(io.StringIO(streamed(client.get("/audit/export.csv"))))
    (row,) = [row for row in rows if row["action"] != "login"]  # the auditor's own sign-in
    assert row["object_id"] == "'=HYPERLINK(\"http://evil.example/\")"
    assert row["action"] == "login.locked_out"
