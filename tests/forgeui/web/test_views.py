"""The dashboard's pages: who may see and do what, answering, escaping, fragments, exports.

Runs are real runs of the demo graphs (``forgeui.demo.graphs``), started and answered through
``forgeui.runs.services``; tasks run immediately (``tests.settings``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Answer, AuditEntry, Interrupt, InterruptStatus, Run, SteeringNote
from forgeui.runs import services

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "<script>alert('pwned')</script>"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def clients(users: dict[str, User]) -> dict[str, Client]:
    made = {}
    for name, user in users.items():
        made[name] = Client()
        made[name].force_login(user)
    return made


def start(users: dict[str, User], graph: str, data: Any = None) -> list[Interrupt]:
    run = services.start_run(users["supervisor"], graph, data if data is not None else {})
    return list(Interrupt.objects.of_tree(run.thread_id).pending().by_age())


def start_supervisor(users: dict[str, User]) -> tuple[Interrupt, Interrupt]:
    """A supervisor run, paused at its research and writer sub-agents' interrupts."""
    pending = {i.sub_agent_id: i for i in start(users, "supervisor")}
    return pending["research_agent"], pending["writer_agent"]


def text(response: Any) -> str:
    return response.content.decode()


def rows_in(html: str) -> list[str]:
    return re.findall(r'<tr id="int-([0-9a-f]+)" class="row', html)


# -- who sees what --------------------------------------------------------------------------


PAGES = ["/", "/runs/", "/audit/", "/audit/export.json", "/audit/export.csv",
         "/audit/decisions/", "/audit/decisions/export.csv"]


def test_anonymous_visitors_are_sent_to_the_login_page(users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    for url in [*PAGES, f"/interrupts/{pending.pk}/", f"/runs/{pending.run_id}/",
                f"/threads/{pending.thread_id}/"]:
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith(
            "/accounts/login/"), url
    assert Client().post(f"/interrupts/{pending.pk}/answer/", {"action": "approve"}
                         ).status_code == 302
    assert Interrupt.objects.get(pk=pending.pk).status == InterruptStatus.PENDING


def test_the_login_page_logs_in_and_lands_on_the_inbox(users: dict[str, User]) -> None:
    client = Client()
    assert "Log in to forge" in text(client.get("/accounts/login/"))
    response = client.post("/accounts/login/", {"username": "reviewer", "password": "reviewer"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert "Approval inbox" in text(client.get("/"))
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_a_user_without_a_role_sees_no_page(clients: dict[str, Client],
                                            users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    for url in [*PAGES, f"/interrupts/{pending.pk}/", f"/runs/{pending.run_id}/",
                f"/threads/{pending.thread_id}/", f"/threads/{pending.thread_id}/export.json"]:
        assert clients["nobody"].get(url).status_code == 403, url


@pytest.mark.parametrize("role", ["reviewer", "supervisor", "auditor"])
def test_every_role_reads_every_page(clients: dict[str, Client], users: dict[str, User],
                                     role: str) -> None:
    [pending] = start(users, "transfer")
    for url in [*PAGES, f"/interrupts/{pending.pk}/", f"/runs/{pending.run_id}/",
                f"/threads/{pending.thread_id}/", f"/threads/{pending.thread_id}/export.json",
                "/?graph=transfer&sort=oldest", "/?namespace=transfer"]:
        assert clients[role].get(url).status_code == 200, url


def test_an_auditor_sees_no_answer_form_and_cannot_post_one(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    auditor = clients["auditor"]
    for html in (text(auditor.get("/")), text(auditor.get(f"/interrupts/{pending.pk}/")),
                 text(auditor.get(f"/runs/{pending.run_id}/"))):
        assert 'name="action"' not in html and "/answer/" not in html
    assert "Read-only" in text(auditor.get(f"/interrupts/{pending.pk}/"))
    before = AuditEntry.objects.count()
    for body in ({"action": "approve"}, {"action": "json", "json_value": "true"}):
        assert auditor.post(f"/interrupts/{pending.pk}/answer/", body).status_code == 403
        refused = auditor.post(f"/interrupts/{pending.pk}/answer/", body, **HTMX)
        assert refused.status_code == 403 and refused["HX-Retarget"] == "#notices"
        assert "does not allow answer" in text(refused) and "<html" not in text(refused)
    for url in (f"/runs/{pending.run_id}/steer/", f"/runs/{pending.run_id}/cancel/",
                f"/threads/{pending.thread_id}/fork/"):
        assert auditor.post(url, {"text": "x"}).status_code == 403, url
    assert Interrupt.objects.get(pk=pending.pk).status == InterruptStatus.PENDING
    assert not Answer.objects.exists() and not SteeringNote.objects.exists()
    assert AuditEntry.objects.count() == before


def test_reviewers_answer_steer_and_fork_but_only_supervisors_cancel(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    reviewer = clients["reviewer"]
    html = text(reviewer.get(f"/runs/{pending.run_id}/"))
    # One note field for the paused run: its answer form's, not a second steer form.
    assert html.count('name="steering"') == 1 and "/steer/" not in html
    assert "/cancel/" not in html and "/fork/" in html
    assert reviewer.post(f"/runs/{pending.run_id}/cancel/").status_code == 403
    assert reviewer.post(f"/runs/{pending.run_id}/steer/", {"text": "be brief"}).status_code == 302
    forked = reviewer.post(f"/threads/{pending.thread_id}/fork/")
    assert forked.status_code == 302
    new_thread = forked["Location"].strip("/").split("/", 1)[1]
    assert Run.objects.get(thread_id=new_thread).status == "interrupted"
    assert AuditEntry.objects.get(action="thread.fork").actor == users["reviewer"]
    html = text(clients["supervisor"].get(f"/runs/{pending.run_id}/"))
    assert "/cancel/" in html and "/fork/" in html


# -- escaping and CSRF ----------------------------------------------------------------------


def test_payloads_show_markup_as_text_everywhere(clients: dict[str, Client],
                                                 users: dict[str, User]) -> None:
    [pending] = start(users, "nested", {"case": SCRIPT})
    services.add_steering_note(users["reviewer"], pending.run_id, SCRIPT)
    client = clients["supervisor"]
    for url in ("/", f"/interrupts/{pending.pk}/", f"/runs/{pending.run_id}/",
                f"/threads/{pending.thread_id}/", "/audit/"):
        html = text(client.get(url))
        assert SCRIPT not in html, url
        assert "&lt;script&gt;" in html, url


def test_every_htmx_request_carries_the_csrf_token(clients: dict[str, Client]) -> None:
    html = text(clients["reviewer"].get("/"))
    token = re.search(r"<body hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'[ >]", html)
    assert token and len(token.group(1)) >= 32


def test_a_post_without_the_csrf_token_is_refused(users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["reviewer"])
    response = client.post(f"/interrupts/{pending.pk}/answer/", {"action": "approve"}, **HTMX)
    assert response.status_code == 403
    assert Interrupt.objects.get(pk=pending.pk).status == InterruptStatus.PENDING
    client.get("/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    response = client.post(f"/interrupts/{pending.pk}/answer/", {"action": "approve"},
                           HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 200


# -- the inbox ------------------------------------------------------------------------------


def test_the_inbox_lists_every_pending_interrupt_with_its_coordinates(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    pending = start(users, "supervisor", {"topic": "q3"}) + start(users, "transfer")
    html = text(clients["reviewer"].get("/"))
    assert sorted(rows_in(html)) == sorted(i.pk for i in pending)
    for interrupt in pending:
        for value in (interrupt.task_id, interrupt.checkpoint_id, "/".join(interrupt.namespace),
                      interrupt.node, interrupt.sub_agent_id or "root"):
            assert value in html
    assert "Use these sources?" in html and 'data-event-id="' in html
    assert 'ws-connect="/ws/inbox/?sort=deadline"' in html  # the default: oldest first


def test_filters_and_sorting(clients: dict[str, Client], users: dict[str, User]) -> None:
    children = start(users, "supervisor")
    [transfer] = start(users, "transfer")
    client = clients["reviewer"]
    assert rows_in(text(client.get("/?graph=transfer"))) == [transfer.pk]
    research = next(i.pk for i in children if i.sub_agent_id == "research_agent")
    assert rows_in(text(client.get("/?sub_agent=research_agent"))) == [research]
    assert rows_in(text(client.get("/?namespace=supervisor/research_agent/"))) == [research]
    assert sorted(rows_in(text(client.get("/?namespace=supervisor")))) == sorted(
        i.pk for i in children)
    assert rows_in(text(client.get("/?namespace=supervisor/nope"))) == []
    newest, oldest = rows_in(text(client.get("/?sort=newest"))), rows_in(text(client.get("/")))
    assert newest == oldest[::-1] and newest[0] == transfer.pk
    assert rows_in(text(client.get("/?sort=oldest"))) == oldest  # no deadlines here
    html = text(client.get("/?graph=transfer&sort=oldest", **HTMX))
    assert html.lstrip().startswith('<section id="inbox"')  # just the fragment
    assert 'ws-connect="/ws/inbox/?graph=transfer&amp;sort=oldest"' in html


def test_a_long_inbox_pages_and_the_next_page_is_a_fragment(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    for _ in range(26):
        start(users, "parallel_approvals")  # two interrupts each: 52
    client = clients["reviewer"]
    html = text(client.get("/"))
    assert len(rows_in(html)) == 50 and "page=2" in html
    assert '<strong id="pending-count">52</strong>' in html
    more = text(client.get("/?page=2", **HTMX))
    assert len(rows_in(more)) == 2 and "<html" not in more and "page=3" not in more


# -- answering ------------------------------------------------------------------------------


def answer(client: Client, interrupt: Interrupt, **body: str) -> Any:
    return client.post(f"/interrupts/{interrupt.pk}/answer/", body, **HTMX)


def test_approving_from_a_row(clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    response = answer(clients["reviewer"], pending, action="approve", where="row")
    assert response.status_code == 200
    assert "Answered by you" in text(response) and f'id="int-{pending.pk}"' in text(response)
    recorded = Answer.objects.get(interrupt_id=pending.pk)
    assert recorded.value is True and recorded.user == users["reviewer"]
    assert Run.objects.get(pk=pending.run_id).status == "completed"


def test_the_second_answer_is_told_who_won(clients: dict[str, Client],
                                           users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    assert answer(clients["supervisor"], pending, action="reject").status_code == 200
    for where in ("row", "panel"):
        response = answer(clients["reviewer"], pending, action="approve", where=where)
        assert response.status_code == 409
        html = text(response)
        assert "Already answered by supervisor" in html and "Latest checkpoint" in html
        assert "completed" in html  # where the run stands now
    assert Answer.objects.get(interrupt_id=pending.pk).value is False
    page = text(clients["reviewer"].get(f"/interrupts/{pending.pk}/"))
    assert "Already answered by supervisor" in page and 'name="action"' not in page


def test_an_answer_form_is_generated_from_the_answer_schema(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    finance = next(i for i in start(users, "parallel_approvals", {"amount": 3})
                   if i.node == "finance")
    client = clients["reviewer"]
    page = text(client.get(f"/interrupts/{finance.pk}/"))
    assert 'name="answer-approved"' in page and 'name="answer-limit"' in page
    assert 'min="0"' in page  # the schema's minimum
    refused = answer(client, finance, action="form", **{"answer-approved": "true",
                                                        "answer-limit": "-4"})
    assert refused.status_code == 422 and "greater than or equal to 0" in text(refused)
    missing = answer(client, finance, action="form", **{"answer-limit": "4"})
    assert missing.status_code == 422 and "This field is required" in text(missing)
    assert Interrupt.objects.get(pk=finance.pk).status == InterruptStatus.PENDING
    done = answer(client, finance, action="form", **{"answer-approved": "true",
                                                     "answer-limit": "4"})
    assert done.status_code == 200
    assert Answer.objects.get(interrupt_id=finance.pk).value == {"approved": True, "limit": 4}


def test_declared_actions_become_buttons_with_their_arguments(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    research, writer = start_supervisor(users)
    client = clients["reviewer"]
    page = text(client.get(f"/interrupts/{research.pk}/"))
    for action in ("accept", "ignore", "respond", "edit"):
        assert f'value="{action}"' in page
    assert answer(client, research, action="respond", text="  ").status_code == 422
    assert answer(client, research, action="approve").status_code == 422  # not offered
    assert answer(client, research, action="edit", edit_json="{nope").status_code == 422
    assert answer(client, research, action="respond", text="use the ledger").status_code == 200
    assert answer(client, writer, action="edit", edit_json='{"draft": "Shorter."}'
                  ).status_code == 200
    assert Answer.objects.get(interrupt_id=research.pk).value == {
        "type": "respond", "args": "use the ledger"}
    assert Answer.objects.get(interrupt_id=writer.pk).value == {
        "type": "edit", "args": {"draft": "Shorter."}}


def test_the_json_answer_box_validates(clients: dict[str, Client],
                                       users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    client = clients["reviewer"]
    for bad, message in (("", "is empty"), ("{'a': 1}", "line 1, column 2"),
                         ("NaN", "not valid JSON"), ("[1,", "not valid JSON")):
        response = answer(client, pending, action="json", json_value=bad)
        assert response.status_code == 422 and message in text(response), bad
    assert answer(client, pending, action="json", json_value='{"ok": [1, 2]}').status_code == 200
    assert Answer.objects.get(interrupt_id=pending.pk).value == {"ok": [1, 2]}


def test_a_steering_note_is_stored_apart_from_the_answer(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    response = answer(clients["reviewer"], pending, action="approve", steering="mind the fee")
    assert response.status_code == 200
    recorded = Answer.objects.get(interrupt_id=pending.pk)
    assert recorded.value is True
    note = SteeringNote.objects.get(answer=recorded)
    assert note.text == "mind the fee" and note.user == users["reviewer"]
    timeline = text(clients["auditor"].get(f"/threads/{pending.thread_id}/"))
    assert "mind the fee" in timeline and "by <strong>reviewer</strong>" in timeline


def test_without_htmx_an_answer_redirects_to_the_interrupt(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    response = clients["reviewer"].post(f"/interrupts/{pending.pk}/answer/",
                                        {"action": "approve"})
    assert response.status_code == 302 and response["Location"] == f"/interrupts/{pending.pk}/"


def test_unknown_ids_are_404(clients: dict[str, Client]) -> None:
    client = clients["supervisor"]
    for url in ("/interrupts/nope/", "/runs/nope/", "/threads/nope/", "/threads/nope/export.json"):
        assert client.get(url).status_code == 404, url
    assert client.post("/interrupts/nope/answer/", {"action": "approve"}).status_code == 404


# -- run tree -------------------------------------------------------------------------------


def test_a_supervisor_answers_one_sub_agent_and_its_sibling_stays_pending(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    research, writer = start_supervisor(users)
    client = clients["supervisor"]
    page = text(client.get(f"/runs/{research.run_id}/"))
    for path in ("supervisor", "supervisor/research_agent", "supervisor/writer_agent"):
        assert f'<span class="node-path">{path}</span>' in page
    response = answer(client, research, action="accept", where="panel")
    assert response.status_code == 200
    assert Run.objects.get(pk=research.run_id).status == "completed"
    assert Interrupt.objects.get(pk=writer.pk).status == InterruptStatus.PENDING
    assert Run.objects.get(pk=writer.run_id).status == "interrupted"
    tree = text(client.get(f"/runs/{research.run_id}/", **HTMX))
    assert tree.lstrip().startswith('<section id="run-tree"') and writer.pk in tree


def test_steering_and_cancelling_one_child_leave_the_sibling_alone(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    research, writer = start_supervisor(users)
    client = clients["supervisor"]
    response = client.post(f"/runs/{writer.run_id}/steer/", {"text": "short"}, **HTMX)
    assert response.status_code == 200 and "Steering note recorded" in text(response)
    assert SteeringNote.objects.get().run_id == writer.run_id
    response = client.post(f"/runs/{writer.run_id}/cancel/", **HTMX)
    assert response.status_code == 200 and "Cancellation requested" in text(response)
    assert Interrupt.objects.get(pk=writer.pk).status == InterruptStatus.CANCELLED
    assert Interrupt.objects.get(pk=research.pk).status == InterruptStatus.PENDING
    again = client.post(f"/runs/{writer.run_id}/cancel/", **HTMX)
    assert again.status_code == 422 and again["HX-Retarget"] == "#notices"


def test_forking_from_a_checkpoint_opens_the_new_threads_timeline(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    client = clients["supervisor"]
    page = text(client.get(f"/threads/{pending.thread_id}/"))
    first = re.search(r'name="checkpoint_id" value="([^"]+)"', page).group(1)
    response = client.post(f"/threads/{pending.thread_id}/fork/", {"checkpoint_id": first},
                           **HTMX)
    assert response.status_code == 204
    target = response["HX-Redirect"]
    assert target.startswith("/threads/") and pending.thread_id not in target
    assert "Forked from checkpoint" in text(client.get(target))
    missing = client.post(f"/threads/{pending.thread_id}/fork/", {"checkpoint_id": "nope"},
                          **HTMX)
    assert missing.status_code == 404


# -- timeline and audit ---------------------------------------------------------------------


def test_the_timeline_shows_payload_answer_who_and_state_diff(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer", {"amount": 7})
    services.answer_interrupt(users["reviewer"], pending.pk, True)
    client = clients["auditor"]
    html = text(client.get(f"/threads/{pending.thread_id}/"))
    assert "Approve this transfer?" in html and "Answer to <code>ask</code> by" in html
    assert "State changes" in html and 'class="diff-added"' in html
    export = client.get(f"/threads/{pending.thread_id}/export.json")
    assert export["Content-Disposition"].startswith("attachment")
    body = json.loads(export.content)
    assert body["thread_id"] == pending.thread_id
    [answered] = [r for cp in body["checkpoints"] for r in cp["resolved"]]
    assert answered["answer"] is True and answered["answered_by"] == "reviewer"
    raised = [i for cp in body["checkpoints"] for i in cp["raised"]]
    assert raised[0]["payload"] == {"question": "Approve this transfer?"}
    last = body["checkpoints"][-1]
    assert last["status"] == "completed"
    assert {c["key"] for c in last["diff"]} >= {"execute"}


def test_the_audit_log_filters_and_exports(clients: dict[str, Client],
                                           users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    services.answer_interrupt(users["reviewer"], pending.pk, True)
    client = clients["auditor"]
    html = text(client.get("/audit/?actor=reviewer&action=answer"))
    assert "<strong>1</strong> entries" in html and ">answer<" in html
    assert "<strong>0</strong> entries" in text(client.get("/audit/?actor=reviewer&action=run"))
    # start, answer, and the task's answer.applied; an action filter is a prefix
    assert "<strong>2</strong> entries" in text(client.get(f"/audit/?object={pending.pk}"))
    assert "<strong>2</strong> entries" in text(client.get("/audit/?action=answer"))
    assert "<strong>0</strong> entries" in text(client.get("/audit/?since=2999-01-01"))
    # the three, and the sign-in of each of the four clients
    assert "<strong>7</strong> entries" in text(client.get("/audit/?until=2999-01-01"))
    assert client.get("/audit/?since=2025-02-30&until=garbage").status_code == 200
    exported = client.get("/audit/export.json?actor=reviewer&action=answer")
    body = json.loads(b"".join(exported.streaming_content))
    assert body["count"] == 1 and body["items"][0]["action"] == "answer"
    assert body["items"][0]["object_id"] == pending.pk


def test_a_live_read_of_a_page_leaves_its_messages_for_the_next_page(
        users: dict[str, User], clients: dict[str, Client]) -> None:
    first, second = start(users, "transfer") + start(users, "transfer")
    client = clients["reviewer"]
    moved = client.post(f"/interrupts/{first.pk}/answer/", {"where": "page", "action": "approve"})
    assert moved.status_code == 302
    page = f"/interrupts/{second.pk}/"
    live = text(client.get(page, HTTP_X_FORGE_LIVE="1"))  # what forge.js reads
    assert 'id="answer-live" data-live' in live and "was recorded" not in live
    assert "was recorded" in text(client.get(page))


def test_the_steer_route_caps_a_note_like_the_answer_form(
        clients: dict[str, Client], users: dict[str, User]) -> None:
    [pending] = start(users, "transfer")
    reviewer = clients["reviewer"]
    url = f"/runs/{pending.run_id}/steer/"
    for note in ("x" * 4001, "x" * 2_000_000):
        refused = reviewer.post(url, {"text": note}, **HTMX)
        assert refused.status_code == 422 and refused["HX-Retarget"] == "#notices"
        assert "steering note" in text(refused)
    assert not SteeringNote.objects.exists()
    assert reviewer.post(url, {"text": "x" * 4000}).status_code == 302
    assert SteeringNote.objects.get().text == "x" * 4000
