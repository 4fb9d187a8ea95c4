"""A fork obeys what the run it copies obeys: who may answer, who may start, what an
input must be; and a fork that is refused leaves nothing behind.

Through the API and through the run page's fork form (Django's test client); tasks run
on commit here, so a fork that is let through has done its work by the time it returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from forgeui.models import AuditEntry, Interrupt, Run
from forgeui.runs import services
from forgeui.runs.exceptions import Forbidden
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """Two more reviewers: ``alice`` in group ``finance``, ``bob`` in none."""
    reviewers = Group.objects.get(name="reviewer")
    finance = Group.objects.create(name="finance")
    alice = User.objects.create_user("alice", password="alice")
    alice.groups.add(reviewers, finance)
    bob = User.objects.create_user("bob", password="bob")
    bob.groups.add(reviewers)
    return {**users, "alice": alice, "bob": bob}


def paused_payment(team: dict[str, User], ledger: Path, amount: int = 5000) -> Interrupt:
    """A payment paused at ``ask``, with no assignees of its own (``race``)."""
    started = services.start_run(team["supervisor"], "race",
                                 {"amount": amount, "ledger": str(ledger)})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


def page_fork(user: User, interrupt: Interrupt, change: str, value: str) -> Any:
    return logged_in(user).post(f"/runs/{interrupt.run_id}/fork/", {
        "interrupt_id": interrupt.pk, "change": change, "value": value},
        HTTP_HX_REQUEST="true")


def left_nothing(thread_id: str) -> None:
    """No run besides the original, and no audit row saying a fork or an answer happened."""
    assert list(Run.objects.roots().values_list("thread_id", flat=True)) == [thread_id]
    assert not AuditEntry.objects.filter(action__in=["thread.fork", "fork.edit",
                                                     "answer"]).exists()


def ledger_lines(ledger: Path) -> list[str]:
    return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []


# -- a fork with answers obeys assignment and claims ------------------------------------------


@pytest.mark.parametrize("hold", ["assigned", "claimed"])
def test_an_api_fork_with_answers_obeys_assignment_and_claims(
        team: dict[str, User], ledger: Path, hold: str) -> None:
    api = Api(team)
    interrupt = paused_payment(team, ledger)
    if hold == "assigned":  # after the pause: only the row knows
        services.assign_interrupt(team["supervisor"], interrupt.pk, ["alice"], [])
    else:
        services.claim_interrupt(team["alice"], interrupt.pk)
    direct = api.post("bob", f"/api/interrupts/{interrupt.pk}/resume", {"value": True})
    assert direct.status_code == 403
    url = f"/api/threads/{interrupt.root_thread_id}/fork"
    forked = api.post("bob", url, {"answers": {interrupt.pk: True}})
    assert forked.status_code == 403, forked.content
    assert "you may not answer this interrupt" in forked.json()["detail"]
    left_nothing(interrupt.root_thread_id)
    assert ledger_lines(ledger) == []
    done = api.post("alice", url, {"answers": {interrupt.pk: True}})
    assert done.status_code == 201, done.content
    assert ledger_lines(ledger) == ["paid 5000 answer=True"]


@pytest.mark.parametrize("hold", ["assigned", "claimed"])
def test_the_page_fork_form_with_an_answer_obeys_assignment_and_claims(
        team: dict[str, User], ledger: Path, hold: str) -> None:
    interrupt = paused_payment(team, ledger)
    if hold == "assigned":
        services.assign_interrupt(team["supervisor"], interrupt.pk, ["alice"], [])
    else:
        services.claim_interrupt(team["alice"], interrupt.pk)
    shown = {who: logged_in(team[who]).get(f"/runs/{interrupt.run_id}/").content.decode()
             for who in ("bob", "alice", "supervisor")}
    assert "Fork with changes" not in shown["bob"]  # he may neither answer nor start
    assert "Fork with changes" in shown["alice"] and 'value="input"' not in shown["alice"]
    assert 'name="change" value="input"' in shown["supervisor"]
    refused = page_fork(team["bob"], interrupt, "answer", "true")
    assert refused.status_code == 403
    html = refused.content.decode()
    assert "You may not answer this interrupt" in html
    assert 'name="value" rows="6" class="json-editor"' in html and ">true</textarea>" in html
    left_nothing(interrupt.root_thread_id)
    assert ledger_lines(ledger) == []
    assert page_fork(team["alice"], interrupt, "answer", "true").status_code == 204
    assert ledger_lines(ledger) == ["paid 5000 answer=True"]


def test_a_forks_interrupts_keep_the_sources_assignment_and_claim(
        team: dict[str, User], ledger: Path) -> None:
    assigned = paused_payment(team, ledger)
    services.assign_interrupt(team["supervisor"], assigned.pk, ["alice"], [])
    copy_thread = services.fork_thread(team["bob"], assigned.root_thread_id)
    (copy,) = Interrupt.objects.of_tree(copy_thread).pending()
    assert copy.assigned_users == ["alice"]
    with pytest.raises(Forbidden, match="assigned to alice"):
        services.answer_interrupt(team["bob"], copy.pk, True)
    claimed = paused_payment(team, ledger)
    services.claim_interrupt(team["alice"], claimed.pk)
    (copy,) = Interrupt.objects.of_tree(
        services.fork_thread(team["bob"], claimed.root_thread_id)).pending()
    assert copy.claimed_by == team["alice"]
    with pytest.raises(Forbidden, match="claimed by alice"):
        services.answer_interrupt(team["bob"], copy.pk, True)
    assert ledger_lines(ledger) == []


def test_a_fork_with_answers_obeys_the_interrupts_own_assignees(
        team: dict[str, User], ledger: Path) -> None:
    api = Api(team)
    thread = api.start("payment", {"amount": 5000, "ledger": str(ledger)})["thread_id"]
    (asked,) = Interrupt.objects.of_tree(thread).pending()
    forked = api.post("bob", f"/api/threads/{thread}/fork", {"answers": {asked.pk: True}})
    assert forked.status_code == 403 and "assigned to group finance" in forked.json()["detail"]
    left_nothing(thread)


# -- a fork with an edited input is a start ----------------------------------------------------


def test_only_those_who_start_runs_fork_with_an_edited_input(
        team: dict[str, User], ledger: Path) -> None:
    api = Api(team)
    thread = api.start("payment", {"amount": 5000, "ledger": str(ledger)})["thread_id"]
    (asked,) = Interrupt.objects.of_tree(thread).pending()
    small = {"amount": 50, "ledger": str(ledger)}
    url = f"/api/threads/{thread}/fork"
    refused = api.post("alice", url, {"inputs": {asked.pk: small}})
    assert refused.status_code == 403 and "start_run" in refused.json()["detail"]
    page = page_fork(team["alice"], asked, "input", json.dumps(small))
    assert page.status_code == 403 and "start_run" in page.content.decode()
    left_nothing(thread)
    assert ledger_lines(ledger) == []
    done = api.post("supervisor", url, {"inputs": {asked.pk: small}})
    assert done.status_code == 201, done.content
    assert ledger_lines(ledger) == ["paid 50"]


@pytest.mark.parametrize("edited", [5, {"amount": "50"}, {"amount": 0}, []])
def test_an_edited_input_must_fit_the_graphs_input_schema(
        team: dict[str, User], ledger: Path, edited: Any) -> None:
    api = Api(team)
    thread = api.start("payment", {"amount": 5000, "ledger": str(ledger)})["thread_id"]
    (asked,) = Interrupt.objects.of_tree(thread).pending()
    refused = api.post("supervisor", f"/api/threads/{thread}/fork",
                       {"inputs": {asked.pk: edited}})
    assert refused.status_code == 422, refused.content
    (error,) = refused.json()["detail"]
    assert "input_schema" in error["msg"] and error["loc"][:3] == ["body", "inputs", asked.pk]
    text = json.dumps(edited)
    page = page_fork(team["supervisor"], asked, "input", text)
    assert page.status_code == 422
    html = page.content.decode()
    assert "input_schema" in html and f">{text.replace(chr(34), '&quot;')}</textarea>" in html
    left_nothing(thread)


# -- a refused fork leaves nothing behind -----------------------------------------------------


@pytest.mark.parametrize("typed", ['"\\u0000"', '{"note": "a\\u0000b"}', '"\\ud800"'])
def test_an_answer_that_cannot_be_stored_is_refused_before_the_fork(
        team: dict[str, User], ledger: Path, typed: str) -> None:
    interrupt = paused_payment(team, ledger)
    refused = page_fork(team["reviewer"], interrupt, "answer", typed)
    assert refused.status_code == 422
    html = refused.content.decode()
    assert "cannot be stored" in html and f">{typed.replace(chr(34), '&quot;')}</textarea>" in html
    left_nothing(interrupt.root_thread_id)


def test_a_fork_keeps_its_starter_and_names_who_forked(team: dict[str, User]) -> None:
    api = Api(team)
    thread = api.start("supervisor", {"topic": "q3"})["thread_id"]
    forked = api.post("bob", f"/api/threads/{thread}/fork", {})
    assert forked.status_code == 201, forked.content
    new_thread = forked.json()["thread_id"]
    runs = list(Run.objects.of_tree(new_thread).select_related("forked_by"))
    assert len(runs) == 3 and {run.forked_by.get_username() for run in runs} == {"bob"}
    root = Run.objects.get(thread_id=new_thread)
    shown = api.get("auditor", f"/api/runs/{root.run_id}").json()
    assert (shown["started_by"], shown["forked_by"]) == ("supervisor", "bob")
    source = Run.objects.get(thread_id=thread)
    assert api.get("auditor", f"/api/runs/{source.run_id}").json()["started_by"] == "supervisor"
