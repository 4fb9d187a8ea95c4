"""Under a policy of two approvals, each counted vote and its note stay their person's: on
the interrupt page (while pending, for the next approver; and after), in the decisions
list and its exports, on the thread timeline, in the API, and in what the run reads.
The run's starter is not offered a form the policy would refuse."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.models import AuditEntry, Interrupt, Run, SteeringNote
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.apiclient import Api
from tests.forgeui.web.four_eyes import POLICY, as_user, text

pytestmark = pytest.mark.django_db(transaction=True)
FIRST, SECOND = "check the IBAN first", "looks fine to me"





def approve(name: str, interrupt: Interrupt, note: str) -> None:
    done = as_user(name).post(f"/interrupts/{interrupt.pk}/answer/",
                              {"action": "approve", "where": "page", "steering": note})
    assert done.status_code == 302, done.content


def vote_of(page: str, name: str) -> str:
    """The counted vote of ``name`` as the interrupt page lists it."""
    found = re.search(rf'<li class="vote vote-approve"><strong>{name}</strong>.*?</li>', page)
    assert found is not None, f"no counted vote of {name} on the page"
    return found.group(0)


@override_settings(FORGE_POLICIES=POLICY)
def test_the_next_approver_reads_the_first_approvers_note(paused: Interrupt) -> None:
    approve("alice", paused, FIRST)
    page = text(as_user("bob").get(f"/interrupts/{paused.pk}/"))
    assert "approved" in vote_of(page, "alice") and FIRST in vote_of(page, "alice")
    assert 'value="approve"' in page  # and bob may still approve


@override_settings(FORGE_POLICIES=POLICY)
def test_the_starter_is_told_why_instead_of_offered_approve(paused: Interrupt) -> None:
    page = text(as_user("supervisor").get(f"/interrupts/{paused.pk}/"))
    refused = page.split('class="muted readonly policy-refused">', 1)[1].split("</p>", 1)[0]
    assert "you started this run" in refused and "nobody approves their own" in refused
    assert 'name="action"' not in page and f"/interrupts/{paused.pk}/answer/" not in page
    assert f"/interrupts/{paused.pk}/claim/" not in page
    assert 'value="approve"' in text(as_user("alice").get(f"/interrupts/{paused.pk}/"))


@override_settings(FORGE_POLICIES=POLICY)
def test_each_approval_and_its_note_stay_their_persons(paused: Interrupt,
                                                        users: dict[str, User]) -> None:
    approve("alice", paused, FIRST)
    approve("bob", paused, SECOND)
    assert Interrupt.objects.get(pk=paused.pk).status == "answered"
    notes = SteeringNote.objects.filter(interrupt=paused).order_by("id")
    assert [(n.user.get_username(), n.text) for n in notes] == [("alice", FIRST), ("bob", SECOND)]
    audited = AuditEntry.objects.filter(action="approval.approve").order_by("seq")
    assert [(e.actor.get_username(), e.detail["steering"]) for e in audited] == [
        ("alice", FIRST), ("bob", SECOND)]
    assert AuditEntry.objects.get(action="answer").detail["steering"] == SECOND

    page = text(as_user("auditor").get(f"/interrupts/{paused.pk}/"))
    assert FIRST in vote_of(page, "alice") and SECOND in vote_of(page, "bob")
    answers = page.split('<ul class="answers">', 1)[1].split("</ul>", 1)[0]
    assert "<strong>bob</strong>" in answers and SECOND in answers and FIRST not in answers

    auditor = as_user("auditor")
    listed = text(auditor.get("/audit/decisions/", {"who": "alice"}))
    row = listed.split(f'data-interrupt="{paused.pk}"', 1)[1].split("</tr>", 1)[0]
    assert "<strong>alice</strong> approved" in row and f"<strong>alice</strong>: {FIRST}" in row
    exported = auditor.get("/audit/decisions/export.csv")
    [line] = csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode()))
    assert line["answered_by"] == "bob" and line["steering"] == SECOND
    votes = json.loads(line["approvals"])
    assert [(v["user"], v["vote"], v["note"]) for v in votes] == [
        ("alice", "approve", FIRST), ("bob", "approve", SECOND)]
    as_json = json.loads(b"".join(auditor.get("/audit/decisions/export.json",
                                              {"who": "alice"}).streaming_content))
    assert [v["note"] for v in as_json["items"][0]["approvals"]] == [FIRST, SECOND]

    timeline = text(auditor.get(f"/threads/{paused.thread_id}/"))
    assert re.search(rf"<strong>alice</strong> approved at .*?: <span class=\"note\">{FIRST}",
                     timeline)
    assert f"Steering note with the answer: {FIRST}" not in timeline

    shown = Api(users).get("auditor", f"/api/interrupts/{paused.pk}").json()
    assert [(v["user"], v["note"]) for v in shown["approvals"]] == [
        ("alice", FIRST), ("bob", SECOND)]
    run = Run.objects.get(pk=paused.run_id)
    assert [(a["user"], a["note"]) for a in run.output["meta"]["approvals"]] == [
        ("alice", FIRST), ("bob", SECOND)]
    read = DjangoCheckpointStore().load_sync(paused.thread_id)
    assert read is not None and FIRST in json.dumps(read.steering)  # the run read both
    assert SECOND in json.dumps(read.steering)
