"""Deciding on the server side: payloads people can read, the context of a decision,
Agent Inbox's four responses, and answer forms that keep what was typed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.inbox.markdown import render_markdown
from forgeui.inbox.payloads import present, scalar_text
from forgeui.models import Answer, Interrupt, InterruptStatus, Run, SteeringNote
from forgeui.runs import services
from forgeui.runs.exceptions import InvalidRequest, StaleAnswer
from tests.forgeui.web.test_views import HTMX, answer, clients, start, text  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


# -- reading a payload ----------------------------------------------------------------------

def test_markdown_renders_and_loses_every_script() -> None:
    html = render_markdown("**Check** the owner\n\n- one\n\n<script>alert(1)</script>\n\n"
                           "<img src=x onerror=alert(1)> [x](javascript:alert(1)) "
                           "[ok](https://example.com)")
    assert "<strong>Check</strong>" in html and "<li>one</li>" in html
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">ok</a>' in html


def test_a_payload_is_a_heading_text_and_fields() -> None:
    shown = present({"title": "Refund?", "question": "Refund it?", "description": "*why*",
                     "amount": 12.5, "urgent": True, "owner": None, "tags": ["a", "b"],
                     "nested": {"x": [1, {"y": 2}]}, "actions": ["accept"],
                     "answer_schema": {"type": "boolean"}, "deadline_s": 60}, "ask")
    assert shown.heading == "Refund?" and shown.description == "<p><em>why</em></p>\n"
    fields = {f.key: f for f in shown.fields}
    # Answer instructions are not content; a deadline_s key is (it is never obeyed).
    assert set(fields) == {"amount", "urgent", "owner", "tags", "nested", "deadline_s"}
    assert (fields["amount"].text, fields["urgent"].text, fields["owner"].text) == (
        "12.5", "yes", "—")
    assert fields["tags"].items == ("a", "b") and '"y": 2' in fields["nested"].json
    assert scalar_text("plain") == "plain"  # no JSON quotes


def test_a_breakpoint_reads_as_words() -> None:
    shown = present({"kind": "before", "node": "deploy", "input": {"version": "2.4.0"}},
                    "deploy", kind="before")
    assert shown.heading == "Paused before deploy"
    assert [(f.key, f.text) for f in shown.fields] == [("version", "2.4.0")]


# -- the four responses ------------------------------------------------------------------------

def test_each_response_to_an_action_is_checked_as_documented(users: dict[str, User]) -> None:
    user = users["reviewer"]
    refusals = [
        ({"type": "edit", "args": {"to": "x@example.com", "subject": "", "body": "b"}},
         "$.args.subject"),
        ({"type": "respond", "args": " "}, "needs some text"),
        ({"type": "accept", "args": {"to": "someone"}}, "takes no args"),
    ]
    [pending] = start(users, "email")
    for value, message in refusals:
        with pytest.raises(InvalidRequest, match=message.replace("$", r"\$")):
            services.answer_interrupt(user, pending.pk, value)
    edited = {"to": "x@example.com", "subject": "Hi", "body": "Short."}
    services.answer_interrupt(user, pending.pk, {"type": "edit", "args": edited})
    run = Run.objects.get(pk=pending.run_id)
    assert run.output == {"send": edited, "response": "edit", "sent_to": "x@example.com",
                          "sent": True}
    [legal] = [i for i in start(users, "parallel_approvals", {"amount": 1})
               if i.node == "legal"]
    with pytest.raises(InvalidRequest, match="does not offer 'ignore'"):
        services.answer_interrupt(user, legal.pk, {"type": "ignore", "args": None})


@pytest.mark.parametrize(("body", "expected"), [
    ({"action": "accept"}, {"response": "accept", "sent": True}),
    ({"action": "ignore"}, {"response": "ignore", "sent": False}),
    ({"action": "respond", "text": "Mention the refund."},
     {"response": "respond", "feedback": "Mention the refund.", "sent": False}),
    ({"action": "edit", "edit-to": "b@example.com", "edit-subject": "New",
      "edit-body": "Text"}, {"response": "edit", "sent_to": "b@example.com"}),
])
def test_the_email_graph_takes_each_response_from_the_page(
        clients: dict[str, Client], users: dict[str, User], body: dict[str, str],  # noqa: F811
        expected: dict[str, Any]) -> None:
    [pending] = start(users, "email", {"to": "a@example.com"})
    page = text(clients["reviewer"].get(f"/interrupts/{pending.pk}/"))
    assert 'name="edit-to"' in page and 'value="a@example.com"' in page  # prefilled
    assert answer(clients["reviewer"], pending, **body).status_code == 200
    output = Run.objects.get(pk=pending.run_id).output
    assert {key: output.get(key) for key in expected} == expected


# -- the context panel ------------------------------------------------------------------------

def test_the_interrupt_page_shows_input_node_input_state_and_notes(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    [deploy] = start(users, "deploy", {"version": "9.9.9"})
    services.add_steering_note(users["supervisor"], deploy.run_id, "roll out slowly")
    page = text(clients["reviewer"].get(f"/interrupts/{deploy.pk}/"))
    assert "Paused before deploy" in page and "{&quot;kind&quot;" not in page.split(
        "Raw JSON")[0]
    context = page.split('aria-label="Context for this decision"')[1]
    assert "9.9.9" in context and "app-9.9.9.tar.gz" in context  # run input, node input
    assert "Latest state (1 key)" in context and "build" in context
    assert "roll out slowly" in context


def test_a_row_summarises_the_question_with_the_input(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    start(users, "transfer", {"amount": 4711, "currency": "EUR", "to": "ACME", "memo": "x"})
    html = text(clients["reviewer"].get("/"))
    assert "Approve this transfer? · amount 4711 · currency EUR · to ACME" in html
    assert "memo x" not in html  # three fields at most


def test_markdown_in_a_description_renders_on_the_page(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    [pending] = start(users, "email")
    page = text(clients["auditor"].get(f"/interrupts/{pending.pk}/"))
    assert "<strong>Accept</strong> sends it as drafted" in page


# -- what was typed survives --------------------------------------------------------------------

def test_every_refusal_gives_back_what_was_typed(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    [pending] = start(users, "transfer")
    client = clients["reviewer"]
    bad_json = answer(client, pending, action="json", json_value="{oops", steering="keep me",
                      where="page")
    assert bad_json.status_code == 422
    assert "{oops</textarea>" in text(bad_json) and "keep me</textarea>" in text(bad_json)
    long_note = "n" * 4001
    too_long = answer(client, pending, action="approve", steering=long_note, where="page")
    assert too_long.status_code == 422 and f"{long_note}</textarea>" in text(too_long)
    assert 'maxlength="4000"' in text(too_long)  # the limit is there before submitting
    [finance] = [i for i in start(users, "parallel_approvals", {"amount": 2})
                 if i.node == "finance"]
    schema = answer(client, finance, action="form", **{"answer-limit": "-1"},
                    steering="about the limit")
    assert schema.status_code == 422 and "about the limit</textarea>" in text(schema)
    assert 'value="-1"' in text(schema)
    row_note = "r" * 4001
    row = answer(client, pending, action="approve", where="row", steering=row_note)
    assert row.status_code == 422 and f'value="{row_note}"' in text(row)
    assert 'id="int-' in text(row) and "Not sent" in text(row)
    assert Interrupt.objects.get(pk=pending.pk).status == InterruptStatus.PENDING


def test_a_lost_race_offers_to_keep_the_note_on_the_run(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    # Legal's answer leaves the run live (finance is still pending): a note can still help.
    [legal] = [i for i in start(users, "parallel_approvals", {"amount": 5})
               if i.node == "legal"]
    services.answer_interrupt(users["supervisor"], legal.pk, {"type": "accept", "args": None})
    lost = answer(clients["reviewer"], legal, action="accept", steering="check the fee",
                  where="page")
    assert lost.status_code == 409 and "Already answered by supervisor" in text(lost)
    assert f"/interrupts/{legal.pk}/note/" in text(lost)
    assert "check the fee</textarea>" in text(lost)
    kept = clients["reviewer"].post(f"/interrupts/{legal.pk}/note/",
                                    {"text": "check the fee"}, **HTMX)
    assert kept.status_code == 200 and "Saved as a steering note" in text(kept)
    note = SteeringNote.objects.get(text="check the fee")
    assert note.run_id == legal.run_id and note.answer_id is None


def test_a_lost_race_on_an_ended_run_still_shows_the_note(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    [pending] = start(users, "transfer")
    services.answer_interrupt(users["supervisor"], pending.pk, True)  # the run completes
    lost = answer(clients["reviewer"], pending, action="reject", steering="too late",
                  where="page")
    assert lost.status_code == 409 and "the run has ended" in text(lost)
    assert "too late</textarea>" in text(lost) and "/note/" not in text(lost)


def test_answering_on_the_page_moves_on_to_the_next_item(
        clients: dict[str, Client], users: dict[str, User]) -> None:  # noqa: F811
    [first] = start(users, "transfer", {"amount": 1})
    [second] = start(users, "transfer", {"amount": 2})
    client = clients["reviewer"]
    moved = answer(client, first, action="approve", where="page")
    assert moved.status_code == 204 and moved["HX-Redirect"] == f"/interrupts/{second.pk}/"
    landed = text(client.get(moved["HX-Redirect"]))
    assert "was recorded" in landed and "Next: Approve this transfer? · amount 2" in landed
    last = answer(client, second, action="approve", where="page")
    assert last["HX-Redirect"] == "/"
    assert Answer.objects.filter(interrupt__in=[first, second]).count() == 2
    with pytest.raises(StaleAnswer):
        services.answer_interrupt(users["reviewer"], first.pk, False)
