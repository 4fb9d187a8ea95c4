"""What counts as an approval under a policy, and who is asked first.

An answer counts when it approves or rejects in a shape forge knows (the quick start's
``{"ok": ...}``, Agent Inbox's list of responses, a request's decisions) or the policy's
own ``answers`` rule says so; anything else is refused (422), never recorded as approved.
Who may count is checked before what they answered (403 before 422).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core import checks
from django.test import override_settings

from forgeui.models import Answer, ApiToken, Approval, Interrupt, Run, Vote
from forgeui.runs import deadlines
from forgeui.runs.policies.checks import check_policies
from forgeui.runs.policies.votes import default_vote
from runtime import DurableExecutor, NodeContext
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

FOUR_EYES = {"payments": {"nodes": ["signoff/sign", "inbox_list/ask"], "approvals": 2,
                          "groups": ["finance"]}}
INBOX_REQUEST = {"action_request": {"action": "wire", "args": {"amount": 5}},
                 "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True,
                            "allow_ignore": True}, "description": "Wire 5?"}


def ask_inbox(order: Any, ctx: NodeContext) -> dict[str, Any]:
    """Agent Inbox's convention: a list of requests, answered by a list of responses."""
    return {"answer": ctx.interrupt([INBOX_REQUEST]), "meta": ctx.answer_metadata()}


inbox_list = DurableExecutor(nodes=[("ask", ask_inbox)], name="inbox_list")
GRAPHS = {**settings.FORGE_GRAPHS,
          "inbox_list": "tests.forgeui.runs.test_policies_answers:inbox_list"}


@pytest.fixture
def api(users: dict[str, User]) -> Api:
    """alice and bob review in finance; dave reviews outside it; admin is a superuser."""
    finance, reviewer = Group.objects.create(name="finance"), Group.objects.get(name="reviewer")
    made = dict(users)
    for name in ("alice", "bob", "dave"):
        made[name] = User.objects.create_user(name, password=name)
        made[name].groups.add(reviewer)
        if name != "dave":
            made[name].groups.add(finance)
    return Api(made)


def start(api: Api, graph: str = "signoff", payload: dict[str, Any] | None = None) -> str:
    started = api.start(graph, {"payload": payload or {}})
    [pending] = api.pending_of(started)
    return str(pending["id"])


def resume(api: Api, who: str, interrupt_id: str, value: Any) -> Any:
    return api.post(who, f"/api/interrupts/{interrupt_id}/resume", {"value": value})


def outcome(interrupt_id: str) -> dict[str, Any]:
    run = Run.objects.get(pk=Interrupt.objects.get(pk=interrupt_id).run_id)
    return dict(run.output)


@override_settings(FORGE_POLICIES={"one": {"nodes": ["signoff/sign"], "approvals": 1}})
def test_an_answer_that_is_neither_never_counts_as_approved(api: Api) -> None:
    interrupt_id = start(api)
    for value in ("NO - reject this", {"ok": "yes"}, {"type": "edit", "ok": False}, None, 1,
                  {"type": "accept", "ok": False}):
        refused = resume(api, "alice", interrupt_id, value)
        assert refused.status_code == 422, (value, refused.content)
        assert "answer approve or reject" in refused.json()["detail"][0]["msg"]
    assert Interrupt.objects.get(pk=interrupt_id).status == "pending"
    assert not Answer.objects.exists()
    assert resume(api, "alice", interrupt_id, False).json()["status"] == "accepted"
    assert outcome(interrupt_id)["meta"]["decision"] == "rejected"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_the_quick_starts_ok_approves_and_rejects(api: Api) -> None:
    approved, rejected = start(api, payload={"question": "Approve?"}), start(api)
    assert resume(api, "alice", approved, {"ok": True}).json()["status"] == "approval_recorded"
    assert resume(api, "bob", approved, {"ok": True}).json()["status"] == "accepted"
    assert outcome(approved)["meta"]["decision"] == "approved"
    assert outcome(approved)["answer"] == {"ok": True}
    assert resume(api, "alice", rejected, {"ok": False}).json()["status"] == "accepted"
    assert outcome(rejected)["meta"]["decision"] == "rejected"


@override_settings(FORGE_POLICIES=FOUR_EYES, FORGE_GRAPHS=GRAPHS)
def test_agent_inbox_list_answers_count(api: Api) -> None:
    interrupt_id = start(api, "inbox_list")
    accept = [{"type": "accept"}]  # as Agent Inbox sends it
    assert resume(api, "alice", interrupt_id, accept).json()["status"] == "approval_recorded"
    edit = [{"type": "edit", "args": {"action": "wire", "args": {"amount": 9}}}]
    assert resume(api, "bob", interrupt_id, edit).status_code == 422
    assert resume(api, "bob", interrupt_id, accept).json()["status"] == "accepted"
    assert outcome(interrupt_id)["answer"] == accept
    assert [a["user"] for a in outcome(interrupt_id)["meta"]["approvals"]] == ["alice", "bob"]
    ignored = start(api, "inbox_list")
    assert resume(api, "alice", ignored, [{"type": "ignore", "args": None}]).json()[
        "status"] == "accepted"
    assert outcome(ignored)["meta"]["decision"] == "rejected"


@override_settings(FORGE_POLICIES={"one": {"nodes": ["inbox_list/ask"], "approvals": 1,
                                           "groups": ["finance"]}}, FORGE_GRAPHS=GRAPHS)
def test_where_one_vote_decides_an_edit_approves_and_a_response_rejects(api: Api) -> None:
    edited = start(api, "inbox_list")
    edit = [{"type": "edit", "args": {"action": "wire", "args": {"amount": 4}}}]
    assert resume(api, "dave", edited, edit).status_code == 403  # who first, still
    assert resume(api, "alice", edited, edit).json()["status"] == "accepted"
    assert outcome(edited)["answer"] == edit  # the edited call is what runs
    assert outcome(edited)["meta"]["decision"] == "approved"
    assert [a["user"] for a in outcome(edited)["meta"]["approvals"]] == ["alice"]
    responded = start(api, "inbox_list")
    response = [{"type": "response", "args": "Wire 4 instead"}]
    assert resume(api, "alice", responded, response).json()["status"] == "accepted"
    assert outcome(responded)["meta"]["decision"] == "rejected"
    mixed = start(api, "inbox_list")
    both = [{"type": "edit", "args": {}}, {"type": "response", "args": "no"}]
    assert resume(api, "alice", mixed, both).status_code == 422


YES_NO = {"answers": {"approve": {"field": "answer.decision", "eq": "yes"},
                      "reject": {"field": "answer.decision", "eq": "no"}}}


@override_settings(FORGE_POLICIES={"p": {"nodes": ["signoff/sign"], "approvals": 2,
                                         **YES_NO}})
def test_a_policy_says_what_approves_and_rejects_for_its_nodes(api: Api) -> None:
    interrupt_id = start(api)
    yes = {"decision": "yes"}
    assert resume(api, "alice", interrupt_id, yes).json()["status"] == "approval_recorded"
    not_its_way = resume(api, "bob", interrupt_id, True)  # the policy's rule replaces it
    assert not_its_way.status_code == 422
    assert "answer.decision" in not_its_way.json()["detail"][0]["msg"]
    assert resume(api, "bob", interrupt_id, {"decision": "no"}).json()["status"] == "accepted"
    assert outcome(interrupt_id)["meta"]["decision"] == "rejected"


def test_a_policys_answers_are_checked_at_start() -> None:
    for bad in ({"approve": {"field": "x", "like": 1}}, {"maybe": {"field": "x", "eq": 1}},
                {}, ["approve"]):
        with override_settings(FORGE_POLICIES={"p": {"nodes": ["a/b"], "answers": bad}}):
            [error] = check_policies()
            assert error.id == "forgeui.E010" and error.level == checks.ERROR, bad
            assert "answers" in error.msg


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_who_may_answer_is_checked_before_what_they_answered(api: Api) -> None:
    interrupt_id = start(api, payload={"actions": ["accept", "edit"]})
    for value in ("NO - reject this", {"type": "bogus"}, {"type": "edit", "args": {}}):
        for who, reason in (("dave", "only finance"), ("supervisor", "you started")):
            refused = resume(api, who, interrupt_id, value)
            assert refused.status_code == 403, (who, value, refused.content)
            assert reason in refused.json()["detail"]
    assert resume(api, "alice", interrupt_id, {"type": "bogus"}).status_code == 422


# -- rules no other fast test states -------------------------------------------------------


def test_a_request_answer_counts_only_when_every_call_agrees() -> None:
    both = {"decisions": [{"type": "approve"}, {"type": "reject"}]}
    assert default_vote(both) is None
    assert default_vote([{"type": "accept"}, {"type": "ignore"}]) is None
    assert default_vote({"decisions": [{"type": "approve"}, {"type": "approve"}]}) == (
        Vote.APPROVE)
    assert default_vote({"decisions": [{"type": "reject"}, {"type": "reject"}]}) == Vote.REJECT
    assert default_vote({"decisions": []}) is None and default_vote([]) is None


@override_settings(FORGE_POLICIES={"bot": {"agents": ["billing-bot"], "approvals": 2}})
def test_approve_and_reject_on_two_calls_is_no_approval(
        api: Api, users: dict[str, User]) -> None:
    token = ApiToken.objects.issue(users["supervisor"], agent="billing-bot")[1]
    made = api.client("reviewer").post(
        "/api/requests", {"actions": [{"name": "pay", "args": {}}, {"name": "mail"}]},
        content_type="application/json", headers={"Authorization": f"Bearer {token}"})
    request_id = made.json()["id"]
    mixed = api.post("alice", f"/api/requests/{request_id}/decision",
                     {"decisions": [{"type": "approve"}, {"type": "reject"}]})
    assert mixed.status_code == 422, mixed.content
    assert not Approval.objects.exists()
    assert api.get("auditor", f"/api/requests/{request_id}").json()["status"] == "pending"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_a_superuser_outside_the_group_does_not_count(api: Api) -> None:
    interrupt_id = start(api)
    refused = resume(api, "admin", interrupt_id, True)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "policy 'payments': only finance may approve"
    assert not Approval.objects.exists()


@override_settings(FORGE_POLICIES={"open": {"nodes": ["signoff/sign"], "approvals": 1,
                                            "escalate_after_s": 60, "escalate_to": "leads"}})
def test_after_escalation_only_the_group_counts_even_when_anyone_could_before(
        api: Api) -> None:
    Group.objects.create(name="leads").user_set.add(User.objects.get(username="dave"))
    interrupt_id = start(api)
    created = Interrupt.objects.get(pk=interrupt_id).created_at
    [expiry] = deadlines.expire_interrupts(now=created + timedelta(seconds=61))
    assert expiry.outcome == "escalated"
    refused = resume(api, "admin", interrupt_id, True)  # may answer anything, but not count
    assert refused.status_code == 403
    assert refused.json()["detail"] == "policy 'open': escalated to group leads"
    assert resume(api, "dave", interrupt_id, True).json()["status"] == "accepted"


@override_settings(FORGE_POLICIES={"p": {"nodes": ["signoff/sign"], "approvals": 1,
                                         "rejections": 2}})
def test_two_rejections_needed_means_one_does_not_end_it(api: Api) -> None:
    interrupt_id = start(api)
    first = resume(api, "alice", interrupt_id, False)
    assert first.json()["status"] == "approval_recorded"
    assert first.json()["approvals"] == ("0 of 1 approval; 1 of 2 rejections: alice; "
                                         "waiting for one")
    assert Interrupt.objects.get(pk=interrupt_id).status == "pending"
    assert resume(api, "bob", interrupt_id, False).json()["status"] == "accepted"
    assert outcome(interrupt_id)["meta"]["decision"] == "rejected"
