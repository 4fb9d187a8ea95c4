"""Breakpoints on the pages: Continue, or cancel the run with a reason; never a Reject
that would be recorded and not obeyed. And a bulk answer that offers only the rows it
settles, reporting each by its title in words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Answer, AnswerKind, Interrupt, InterruptStatus, Run
from forgeui.runs import services
from tests.forgeui.conftest import lines

pytestmark = pytest.mark.django_db(transaction=True)
HTMX = {"HTTP_HX_REQUEST": "true"}
HEX_ID = re.compile(r"\b[0-9a-f]{16,}\b")


def breakpoint_at(users: dict[str, User], ledger: Path, version: str = "2.4.0") -> Interrupt:
    started = services.start_run(users["supervisor"], "guarded",
                                 {"version": version, "ledger": str(ledger)})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


def question(users: dict[str, User], text: str = "Approve?", **payload: object) -> Interrupt:
    started = services.start_run(users["supervisor"], "custom",
                                 {"question": text, "payload": payload})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


def reviewer(users: dict[str, User]) -> Client:
    client = Client()
    client.force_login(users["reviewer"])
    return client


def test_a_breakpoint_page_offers_continue_and_cancel_only(users: dict[str, User],
                                                           ledger: Path) -> None:
    interrupt = breakpoint_at(users, ledger)
    page = reviewer(users).get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert 'value="continue"' in page and ">Continue</button>" in page
    assert f'action="/interrupts/{interrupt.pk}/cancel/"' in page
    assert "Cancel the run</button>" in page and "<code>ship</code> never runs" in page
    for absent in ('value="reject"', 'value="approve"', "Answers false", ">Reject<",
                   'name="json_value"', 'data-key="r"'):
        assert absent not in page, absent
    inbox = reviewer(users).get("/").content.decode()
    row = inbox.split(f'id="int-{interrupt.pk}"', 1)[1].split("</tr>", 1)[0]
    assert 'value="continue"' in row and "Cancel run…" in row
    assert 'value="reject"' not in row and 'data-key="r"' not in row
    assert 'data-settles="continue"' in row


def test_cancel_from_the_page_stops_the_node_and_shows_in_decisions(
        users: dict[str, User], ledger: Path) -> None:
    interrupt = breakpoint_at(users, ledger)
    client = reviewer(users)
    response = client.post(f"/interrupts/{interrupt.pk}/cancel/",
                           {"where": "page", "reason": "2.4.0 has not passed QA yet"})
    assert response.status_code == 302
    assert Run.objects.get(pk=interrupt.run_id).status == "cancelled"
    assert lines(ledger) == []
    decisions = client.get("/audit/decisions/").content.decode()
    assert "→ Cancelled at breakpoint: 2.4.0 has not passed QA yet" in decisions
    exported = client.get("/audit/decisions/export.csv")
    text = b"".join(exported.streaming_content).decode()
    assert "Cancelled at breakpoint: 2.4.0 has not passed QA yet" in text
    found = client.get("/audit/decisions/", {"q": "QA"}).content.decode()
    assert "2.4.0 has not passed QA yet" in found
    page = client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert "Run cancelled at this breakpoint by reviewer" in page


@pytest.mark.parametrize(("typed", "message"), [
    ("   ", "say why the run is cancelled: a reason is required"),
    ("y" * 4001, "the reason is longer than 4000 characters"),
])
def test_a_refused_cancel_keeps_what_was_typed(users: dict[str, User], ledger: Path,
                                               typed: str, message: str) -> None:
    interrupt = breakpoint_at(users, ledger)
    response = reviewer(users).post(f"/interrupts/{interrupt.pk}/cancel/",
                                    {"where": "page", "reason": typed}, **HTMX)
    assert response.status_code == 422
    panel = response.content.decode()
    assert message.capitalize() in panel and 'aria-invalid="true"' in panel
    assert f">{typed}</textarea>" in panel
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.PENDING
    assert not Answer.objects.exists()


def test_the_run_tree_panel_cancels_too(users: dict[str, User], ledger: Path) -> None:
    interrupt = breakpoint_at(users, ledger)
    response = reviewer(users).post(f"/interrupts/{interrupt.pk}/cancel/",
                                    {"where": "panel", "reason": "frozen"}, **HTMX)
    assert response.status_code == 200
    assert "You cancelled the run at this breakpoint." in response.content.decode()
    assert Answer.objects.get().kind == AnswerKind.CANCEL


def test_a_reject_posted_to_a_breakpoint_is_refused(users: dict[str, User],
                                                    ledger: Path) -> None:
    interrupt = breakpoint_at(users, ledger)
    client = reviewer(users)
    for action in ("reject", "approve", "json"):
        response = client.post(f"/interrupts/{interrupt.pk}/answer/",
                               {"where": "page", "action": action, "json_value": "false"},
                               **HTMX)
        assert response.status_code == 422
        assert "it takes no other answer" in response.content.decode()
    assert not Answer.objects.exists()
    response = client.post(f"/interrupts/{interrupt.pk}/answer/",
                           {"where": "row", "action": "continue"}, **HTMX)
    assert response.status_code == 200
    assert Answer.objects.get().value is True
    assert lines(ledger) == ["shipped app-2.4.0.tar.gz"]


def test_bulk_offers_each_row_to_the_actions_that_settle_it(users: dict[str, User],
                                                            ledger: Path) -> None:
    stop = breakpoint_at(users, ledger)
    yes_no = question(users)
    schema = question(users, "How much?", answer_schema={"type": "integer"})
    proposal = question(users, "Send it?", actions=["accept", "respond"])
    inbox = reviewer(users).get("/").content.decode()

    def tick_box(interrupt: Interrupt) -> str:
        row = inbox.split(f'id="int-{interrupt.pk}"', 1)[1].split("</tr>", 1)[0]
        found = re.search(r'<input type="checkbox" name="ids"[^>]*>', row)
        return found.group(0) if found else ""

    assert 'data-settles="continue"' in tick_box(stop)
    assert 'data-settles="approve reject"' in tick_box(yes_no)
    assert 'data-settles="accept"' in tick_box(proposal)
    assert tick_box(schema) == ""  # no one value settles it: open it


def test_bulk_reports_rows_by_title_in_words(users: dict[str, User], ledger: Path) -> None:
    stop = breakpoint_at(users, ledger, "3.1.0")
    yes_no = question(users, "Refund the order?")
    taken = question(users, "Close the ticket?")
    schema = question(users, "How much?", answer_schema={"type": "integer"})
    services.answer_interrupt(users["supervisor"], taken.pk, True)
    client = reviewer(users)
    response = client.post("/interrupts/bulk/", {
        "action": "reject", "ids": [stop.pk, yes_no.pk, taken.pk, schema.pk, "gone"]}, **HTMX)
    report = response.content.decode()
    assert response.status_code == 200 and "1 of 5 answered." in report
    assert "Refund the order?</a> → Rejected" in report
    assert ("Paused before ship · version 3.1.0 · ledger") in report
    assert "a breakpoint: Continue it, or open it to cancel the run with a reason" in report
    assert "Close the ticket?</a> → Not answered: already answered by supervisor" in report
    assert "How much?</a> → Not answered: needs a specific answer, open it" in report
    assert "An interrupt that no longer exists → Not answered: it no longer exists" in report
    assert not HEX_ID.search(re.sub(r'(href|data-interrupt)="[^"]*"', "", report))
    assert "schema" not in report.lower()
    assert Interrupt.objects.get(pk=stop.pk).status == InterruptStatus.PENDING
    assert lines(ledger) == []
    done = client.post("/interrupts/bulk/", {"action": "continue", "ids": [stop.pk]}, **HTMX)
    assert "1 of 1 answered." in done.content.decode()
    assert lines(ledger) == ["shipped app-3.1.0.tar.gz"]


def test_bulk_all_matching_takes_only_rows_the_action_settles(users: dict[str, User],
                                                             ledger: Path) -> None:
    stops = [breakpoint_at(users, ledger, v) for v in ("1.0.0", "1.0.1")]
    yes_no = question(users)
    response = reviewer(users).post("/interrupts/bulk/",
                                    {"action": "continue", "all": "1", "query": ""}, **HTMX)
    assert "2 of 2 answered." in response.content.decode()
    assert {a.interrupt_id for a in Answer.objects.all()} == {s.pk for s in stops}
    assert Interrupt.objects.get(pk=yes_no.pk).status == InterruptStatus.PENDING
    rejected = reviewer(users).post("/interrupts/bulk/",
                                    {"action": "reject", "all": "1", "query": ""}, **HTMX)
    assert "1 of 1 answered." in rejected.content.decode()
    assert Answer.objects.get(interrupt=yes_no).value is False


def test_api_bulk_false_leaves_breakpoints_alone(users: dict[str, User], ledger: Path) -> None:
    from tests.forgeui.apiclient import Api

    stop = breakpoint_at(users, ledger)
    yes_no = question(users)
    body = Api(users).post("reviewer", "/api/interrupts/bulk_resume",
                           {"ids": [stop.pk, yes_no.pk], "value": False}).json()
    assert [i["outcome"] for i in body["items"]] == ["not_settled", "accepted"]
    assert "cancel the run" in body["items"][0]["detail"]
    assert Interrupt.objects.get(pk=stop.pk).status == InterruptStatus.PENDING


def test_the_run_tree_offers_continue_and_cancel(users: dict[str, User], ledger: Path) -> None:
    interrupt = breakpoint_at(users, ledger)
    page = reviewer(users).get(f"/runs/{interrupt.run_id}/").content.decode()
    assert ">Continue</button>" in page and "Cancel the run</button>" in page
    assert f'hx-post="/interrupts/{interrupt.pk}/cancel/"' in page
    assert 'value="reject"' not in page and "Answers false" not in page


def test_bulk_with_nothing_to_settle_says_so(users: dict[str, User]) -> None:
    question(users)
    response = reviewer(users).post("/interrupts/bulk/",
                                    {"action": "continue", "all": "1", "query": ""}, **HTMX)
    assert response.status_code == 422
    assert "Nothing to continue: tick the rows first, or no row matching the filter takes " \
           "“continue”" in response.content.decode()
    assert not Answer.objects.exists()


def test_a_cancel_without_a_reason_keeps_the_note_typed_beside_it(
        users: dict[str, User], ledger: Path) -> None:
    interrupt = breakpoint_at(users, ledger)
    client = reviewer(users)
    page = client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    cancel = re.search(r'<form[^>]*class="cancel-run"[^>]*>', page)
    assert cancel is not None and f'hx-include="#steer-{interrupt.pk}"' in cancel.group(0)
    assert f'id="steer-{interrupt.pk}" name="steering"' in page
    response = client.post(f"/interrupts/{interrupt.pk}/cancel/",
                           {"where": "page", "reason": "", "steering": "ask QA first"}, **HTMX)
    assert response.status_code == 422
    assert ">ask QA first</textarea>" in response.content.decode()
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.PENDING
