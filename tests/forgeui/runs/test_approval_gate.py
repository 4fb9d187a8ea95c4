"""The gate in front of an approval: nobody approves their own, however the run came to
be (a fork, a sub-agent), and the compare-and-sets that make one decision win.

Through the API (real tokens, the immediate task backend, the real executor and the ORM
store) where a person acts; where a race is the point, the service's own steps are
called in the order the race would interleave them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings

from forgeui.models import Answer, Approval, AuditEntry, Interrupt, Run
from forgeui.runs import services
from forgeui.runs.exceptions import StaleAnswer
from forgeui.runs.policies import auto
from forgeui.runs.policies.config import policies
from forgeui.runs.services import _recording
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

ONE = {"payments": {"nodes": ["signoff/sign"], "approvals": 1, "groups": ["finance"]}}


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """alice and bob: reviewers in finance; the supervisor, who starts runs, too (so only
    the no-self-approval rule stops them)."""
    finance = Group.objects.create(name="finance")
    reviewer = Group.objects.get(name="reviewer")
    made = dict(users)
    for name in ("alice", "bob"):
        made[name] = User.objects.create_user(name, password=name)
        made[name].groups.add(reviewer, finance)
    users["supervisor"].groups.add(finance)
    return made


@pytest.fixture
def api(team: dict[str, User]) -> Api:
    return Api(team)


def resume(api: Api, who: str, interrupt_id: str, value: Any = True) -> Any:
    return api.post(who, f"/api/interrupts/{interrupt_id}/resume", {"value": value})


def paused(api: Api, graph: str = "signoff", input: Any = None) -> dict[str, Any]:
    started = api.start(graph, {"payload": {}} if input is None else input)
    [pending] = api.pending_of(started)
    return pending


# -- a fork keeps its starter -------------------------------------------------------------


@override_settings(FORGE_POLICIES=ONE)
def test_the_starter_may_not_approve_a_fork_of_their_run(api: Api) -> None:
    original = paused(api)
    forked = api.post("bob", f"/api/threads/{original['root_thread_id']}/fork", {})
    assert forked.status_code == 201, forked.content
    [copy] = api.pending(root_thread_id=forked.json()["thread_id"])

    refused = resume(api, "supervisor", copy["id"])
    assert refused.status_code == 403, refused.content
    assert "you started this run" in refused.json()["detail"]
    assert resume(api, "bob", copy["id"]).status_code == 403  # nor the one who forked it
    assert Interrupt.objects.get(pk=copy["id"]).status == "pending"
    assert resume(api, "alice", copy["id"]).status_code == 202

    root = Run.objects.get(thread_id=forked.json()["thread_id"])
    assert root.started_by.get_username() == "supervisor"
    assert root.forked_by.get_username() == "bob"
    shown = api.get("auditor", f"/api/runs/{root.run_id}").json()
    assert shown["started_by"] == "supervisor" and shown["forked_by"] == "bob"


# -- teeth --------------------------------------------------------------------------------


@override_settings(FORGE_POLICIES={"payer": {"nodes": ["gated_team/ask_then_pay"],
                                             "approvals": 1}})
def test_the_starter_may_not_approve_a_sub_agents_interrupt(api: Api, tmp_path: Path) -> None:
    (tmp_path / "gate").touch()  # were it let through, the node would not wait
    asked = paused(api, "gated_team", {"amount": 5, **{
        name: str(tmp_path / name) for name in ("ledger", "entered", "gate")}})
    assert asked["sub_agent_id"] == "payer" and asked["thread_id"] != asked["root_thread_id"]
    refused = resume(api, "supervisor", asked["id"])
    assert refused.status_code == 403, refused.content
    assert "you started this run" in refused.json()["detail"]
    assert Interrupt.objects.get(pk=asked["id"]).status == "pending"
    assert not Answer.objects.exists() and not Approval.objects.exists()


@override_settings(FORGE_POLICIES={"small": {"nodes": ["signoff/sign"], "approvals": 1,
                                             "auto_approve": {"field": "amount", "lt": 100}}})
def test_the_rules_close_loses_to_a_person_who_answered_first(api: Api) -> None:
    asked = paused(api, input={"payload": {"args": {"amount": 5000}}})
    interrupt = Interrupt.objects.select_related("run").get(pk=asked["id"])  # read pending
    assert resume(api, "alice", asked["id"]).status_code == 202
    assert auto._accept(interrupt, policies().by_name["small"], True) is None
    [answer] = Answer.objects.filter(interrupt_id=asked["id"])
    assert answer.user.get_username() == "alice"
    assert not AuditEntry.objects.filter(action="answer.auto_approved").exists()


@override_settings(FORGE_POLICIES=ONE)
def test_a_refused_forks_denial_is_audited_and_nothing_else_is_left(api: Api) -> None:
    """A refusal is audited outside the fork's transaction, so the row stays when the
    fork is refused; the fork itself leaves nothing."""
    asked = paused(api)
    thread = asked["root_thread_id"]
    refused = api.post("alice", f"/api/threads/{thread}/fork",
                       {"answers": {asked["id"]: True}})
    assert refused.status_code == 403, refused.content
    [denied] = AuditEntry.objects.filter(action="answer.denied")
    assert denied.actor.get_username() == "alice" and denied.object_id == asked["id"]
    assert "a fork cannot come with its answer" in denied.detail["reason"]
    assert list(Run.objects.roots().values_list("thread_id", flat=True)) == [thread]
    assert not AuditEntry.objects.filter(action__in=["thread.fork", "fork.edit"]).exists()


def test_a_claim_taken_after_the_checks_wins_over_the_answer(team: dict[str, User]) -> None:
    """The checks before an answer read the interrupt unclaimed; someone claims it before
    the answer's update: the update's compare-and-set refuses the answer."""
    started = services.start_run(team["supervisor"], "signoff", {"payload": {}})
    checked = Interrupt.objects.select_related("run").get(root_thread_id=started.thread_id)
    services.require_may_answer(team["alice"], checked, True)  # passes: nobody claims it
    services.claim_interrupt(team["bob"], checked.pk)
    with pytest.raises(StaleAnswer) as lost:
        _recording.accept(team["alice"], checked, _recording.Given(True))
    assert lost.value.reason == "claimed meanwhile by bob"
    row = Interrupt.objects.get(pk=checked.pk)
    assert row.status == "pending" and row.claimed_by == team["bob"]
    assert not Answer.objects.exists()
