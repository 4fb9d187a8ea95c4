"""Approval policies through the API: M distinct approvers, who may count, no self-approval,
rules that approve, escalation, and payloads that cannot lower a policy.

Everything goes through Django's full stack with real tokens (``Api``), the immediate task
backend, the real executor and the ORM store.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import checks
from django.test import override_settings

from forgeui.models import Answer, ApiToken, Approval, AuditEntry, Interrupt, Run
from forgeui.runs import deadlines
from forgeui.runs.policies.checks import check_policies
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

FOUR_EYES = {"payments": {"nodes": ["signoff/sign"], "approvals": 2, "groups": ["finance"]}}


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """alice, bob and carol in finance (reviewers); dave a reviewer outside it; the
    supervisor, who starts runs, in finance too (so only self-approval stops them)."""
    finance = Group.objects.create(name="finance")
    reviewer = Group.objects.get(name="reviewer")
    made = dict(users)
    for name in ("alice", "bob", "carol", "dave"):
        made[name] = User.objects.create_user(name, password=name)
        made[name].groups.add(reviewer)
        if name != "dave":
            made[name].groups.add(finance)
    users["supervisor"].groups.add(finance)
    return made


@pytest.fixture
def api(team: dict[str, User]) -> Api:
    return Api(team)


def start(api: Api, payload: dict[str, Any] | None = None, who: str = "supervisor") -> str:
    started = api.start("signoff", {"payload": payload or {}}, who=who)
    [pending] = api.pending_of(started)
    return str(pending["id"])


def resume(api: Api, who: str, interrupt_id: str, value: Any = True) -> Any:
    return api.post(who, f"/api/interrupts/{interrupt_id}/resume", {"value": value})


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_two_of_three_resumes_once_with_who_approved(api: Api) -> None:
    interrupt_id = start(api)
    first = resume(api, "alice", interrupt_id)
    assert first.status_code == 202, first.content
    assert first.json()["status"] == "approval_recorded" and first.json()["answer_id"] is None
    assert first.json()["approvals"] == ("1 of 2 approvals: alice; waiting for one more "
                                         "from finance")
    assert Interrupt.objects.get(pk=interrupt_id).status == "pending"
    assert not Answer.objects.filter(interrupt_id=interrupt_id).exists()
    listed = api.get("reviewer", f"/api/interrupts/{interrupt_id}").json()
    assert listed["status"] == "pending"

    last = resume(api, "bob", interrupt_id, True)
    assert last.status_code == 202, last.content
    assert last.json()["status"] == "accepted" and last.json()["answer_id"] is not None
    assert last.json()["approvals"] == "2 of 2 approvals: alice, bob"
    answer = Answer.objects.get(interrupt_id=interrupt_id)
    run = Run.objects.get(pk=answer.interrupt.run_id)
    assert run.status == "completed"
    meta = run.output["meta"]
    assert meta["policy"] == "payments" and meta["decision"] == "approved"
    assert [a["user"] for a in meta["approvals"]] == ["alice", "bob"]
    assert all(a["at"] for a in meta["approvals"])
    assert run.output["answer"] is True
    late = resume(api, "carol", interrupt_id)
    assert late.status_code == 409 and "already answered by bob" in late.json()["detail"]
    assert Approval.objects.filter(interrupt_id=interrupt_id).count() == 2


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_one_persons_approval_counts_once(api: Api) -> None:
    interrupt_id = start(api)
    assert resume(api, "alice", interrupt_id).status_code == 202
    again = resume(api, "alice", interrupt_id)
    assert again.status_code == 409, again.content
    assert "alice already counted (approve)" in again.json()["detail"]
    assert again.json()["answered_by"] == "alice"
    assert Interrupt.objects.get(pk=interrupt_id).status == "pending"
    assert Approval.objects.filter(interrupt_id=interrupt_id).count() == 1
    assert AuditEntry.objects.filter(action="answer.refused", object_id=interrupt_id).exists()


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_only_the_named_group_counts(api: Api) -> None:
    interrupt_id = start(api)
    refused = resume(api, "dave", interrupt_id)
    assert refused.status_code == 403
    assert refused.json()["detail"] == "policy 'payments': only finance may approve"
    assert not Approval.objects.exists()


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_the_starter_may_not_approve_their_own_run(api: Api) -> None:
    interrupt_id = start(api, who="supervisor")
    refused = resume(api, "supervisor", interrupt_id)
    assert refused.status_code == 403, refused.content
    assert "you started this run" in refused.json()["detail"]
    assert not Approval.objects.exists()
    assert AuditEntry.objects.filter(action="answer.denied", object_id=interrupt_id).exists()


@override_settings(FORGE_POLICIES={"one": {"nodes": ["signoff/sign"], "approvals": 1}})
def test_even_one_approval_is_never_the_starters(api: Api) -> None:
    interrupt_id = start(api, who="admin")  # a superuser, with a token of their own
    assert resume(api, "admin", interrupt_id).status_code == 403
    assert resume(api, "alice", interrupt_id).status_code == 202
    assert Interrupt.objects.get(pk=interrupt_id).status == "answered"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_a_reject_ends_it_and_the_run_sees_who(api: Api) -> None:
    interrupt_id = start(api)
    assert resume(api, "alice", interrupt_id).status_code == 202
    rejected = resume(api, "bob", interrupt_id, False)
    assert rejected.status_code == 202 and rejected.json()["status"] == "accepted"
    run = Run.objects.get(pk=Interrupt.objects.get(pk=interrupt_id).run_id)
    assert run.output["answer"] is False
    assert run.output["meta"]["decision"] == "rejected"
    assert [r["user"] for r in run.output["meta"]["rejections"]] == ["bob"]


@override_settings(FORGE_POLICIES={"p": {"nodes": ["signoff/sign"], "approvals": 2,
                                         "rejections": 2}})
def test_rejections_count_like_approvals(api: Api) -> None:
    interrupt_id = start(api)
    first = resume(api, "alice", interrupt_id, False)
    assert first.json()["status"] == "approval_recorded"
    assert first.json()["approvals"] == ("0 of 2 approvals; 1 of 2 rejections: alice; "
                                         "waiting for two")
    assert resume(api, "bob", interrupt_id, False).json()["status"] == "accepted"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_an_edit_is_not_an_approval_under_four_eyes(api: Api) -> None:
    interrupt_id = start(api, {"actions": ["accept", "edit"]})
    edited = resume(api, "alice", interrupt_id, {"type": "edit", "args": {"amount": 1}})
    assert edited.status_code == 422
    assert "answer approve or reject" in edited.json()["detail"][0]["msg"]
    accepted = resume(api, "alice", interrupt_id, {"type": "accept", "args": None})
    assert accepted.json()["status"] == "approval_recorded"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_a_payload_cannot_lower_its_policy(api: Api) -> None:
    interrupt_id = start(api, {"approvals": 1, "policy": None, "rejections": 5,
                               "auto_approve": {"field": "amount", "lt": 10**9},
                               "FORGE_POLICIES": {}, "groups": ["everyone"], "amount": 5})
    assert resume(api, "alice", interrupt_id).json()["status"] == "approval_recorded"
    assert resume(api, "dave", interrupt_id).status_code == 403
    assert Interrupt.objects.get(pk=interrupt_id).status == "pending"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_bulk_answers_count_as_approvals(api: Api) -> None:
    first, second = start(api), start(api)
    body = {"ids": [first, second], "value": True}
    outcome = api.post("alice", "/api/interrupts/bulk_resume", body).json()
    assert [o["outcome"] for o in outcome["items"]] == ["accepted", "accepted"]
    assert outcome["items"][0]["answer_id"] is None
    assert "1 of 2 approvals: alice" in outcome["items"][0]["detail"]
    again = api.post("alice", "/api/interrupts/bulk_resume", body).json()
    assert [o["outcome"] for o in again["items"]] == ["stale", "stale"]
    done = api.post("bob", "/api/interrupts/bulk_resume", body).json()
    assert [o["answer_id"] is not None for o in done["items"]] == [True, True]
    assert Interrupt.objects.filter(pk__in=[first, second], status="answered").count() == 2


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_resume_map_obeys_the_policy(api: Api) -> None:
    started = api.start("signoff", {"payload": {}})
    [pending] = api.pending_of(started)
    body = {"thread_id": started["thread_id"], "answers": {pending["id"]: True}}
    assert api.post("supervisor", "/api/resume_map", body).status_code == 403
    recorded = api.post("alice", "/api/resume_map", body)
    assert recorded.status_code == 202 and recorded.json()["items"][0]["status"] == (
        "approval_recorded")


@override_settings(FORGE_POLICIES={"small": {"nodes": ["signoff/sign"], "approvals": 2,
                                             "auto_approve": {"field": "amount", "lt": 1000}}})
def test_a_rule_approves_below_the_limit_and_not_above(api: Api) -> None:
    started = api.start("signoff", {"payload": {"args": {"amount": 999}}})
    assert api.pending_of(started) == []
    run = Run.objects.get(pk=started["run_id"])
    assert run.status == "completed" and run.output["answer"] is True
    assert run.output["meta"] == {"policy": "small", "decided_by": "policy",
                                  "decision": "approved", "approvals": [], "rejections": [],
                                  "rule": {"field": "amount", "lt": 1000}}
    entry = AuditEntry.objects.get(action="answer.auto_approved")
    assert entry.actor is None and entry.detail["rule"] == {"field": "amount", "lt": 1000}
    for amount in (1000, "12", True):  # at the limit, text, a boolean: people decide
        big = api.start("signoff", {"payload": {"args": {"amount": amount}}})
        assert len(api.pending_of(big)) == 1, amount


@override_settings(FORGE_POLICIES={"leads": {"nodes": ["signoff/sign"], "approvals": 1,
                                             "users": ["alice"], "escalate_after_s": 60,
                                             "escalate_to": "leads"}})
def test_unanswered_past_escalate_after_s_goes_to_the_named_group(
        api: Api, team: dict[str, User]) -> None:
    Group.objects.create(name="leads").user_set.add(team["dave"])
    interrupt_id = start(api)
    assert resume(api, "dave", interrupt_id).status_code == 403  # not yet
    created = Interrupt.objects.get(pk=interrupt_id).created_at
    assert deadlines.expire_interrupts(now=created + timedelta(seconds=59)) == []
    [expiry] = deadlines.expire_interrupts(now=created + timedelta(seconds=61))
    assert expiry.outcome == "escalated" and expiry.interrupt_id == interrupt_id
    row = Interrupt.objects.get(pk=interrupt_id)
    assert row.assigned_groups == ["leads"] and row.escalated_at is not None
    assert AuditEntry.objects.get(action="interrupt.escalated").detail["to_group"] == "leads"
    assert deadlines.expire_interrupts(now=created + timedelta(seconds=600)) == []  # once
    assert resume(api, "bob", interrupt_id).status_code == 403  # assigned to leads now
    assert resume(api, "dave", interrupt_id).json()["status"] == "accepted"


@override_settings(FORGE_POLICIES=FOUR_EYES)
def test_a_deadline_default_may_reject_but_never_approve(api: Api) -> None:
    approving = api.start("custom", {"options": {"deadline_s": 5, "default": True}})
    started = api.start("signoff", {"payload": {}})
    assert started  # a run the policy covers, and one it does not (custom/ask)
    with override_settings(FORGE_POLICIES={"p": {"nodes": ["custom/ask"], "approvals": 2}}):
        [row] = api.pending_of(approving)
        created = Interrupt.objects.get(pk=row["id"]).created_at
        [expiry] = deadlines.expire_interrupts(now=created + timedelta(seconds=6))
        assert expiry.outcome == "overdue" and "only people approve" in expiry.reason
        rejecting = api.start("custom", {"options": {"deadline_s": 5, "default": False}})
        [row] = api.pending_of(rejecting)
        created = Interrupt.objects.get(pk=row["id"]).created_at
        outcomes = deadlines.expire_interrupts(now=created + timedelta(seconds=6))
        assert [e.outcome for e in outcomes if e.interrupt_id == row["id"]] == ["defaulted"]
        assert Answer.objects.get(interrupt_id=row["id"]).meta["decided_by"] == "system"


# -- agents' requests --------------------------------------------------------------------


BOT = {"bot-payments": {"agents": ["billing-bot"], "approvals": 2, "groups": ["finance"],
                        "auto_approve": {"field": "amount", "lt": 100}}}


def ask(api: Api, token: str, amount: int, **extra: Any) -> dict[str, Any]:
    client = api.client("reviewer")
    response = client.post("/api/requests", {"actions": [{"name": "pay", "args": {
        "amount": amount}}], **extra}, content_type="application/json",
        headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 201, response.content
    return dict(response.json())


def decide(api: Api, who: str, request_id: str, kind: str = "approve") -> Any:
    return api.post(who, f"/api/requests/{request_id}/decision",
                    {"decisions": [{"type": kind}]})


@override_settings(FORGE_POLICIES=BOT)
def test_an_agents_request_needs_two_and_never_its_owner(
        api: Api, team: dict[str, User]) -> None:
    token = ApiToken.objects.issue(team["carol"], name="bot", agent="billing-bot")[1]
    made = ask(api, token, 5000, agent={"name": "harmless-helper"})  # a name it picked
    assert made["status"] == "pending"
    refused = decide(api, "carol", made["id"])
    assert refused.status_code == 403 and "own the token that asked" in refused.json()["detail"]
    assert decide(api, "alice", made["id"]).status_code == 200
    read = api.get("reviewer", f"/api/requests/{made['id']}").json()
    assert read["status"] == "pending"
    assert read["approvals"] == "1 of 2 approvals: alice; waiting for one more from finance"
    assert decide(api, "alice", made["id"]).status_code == 409
    done = decide(api, "bob", made["id"])
    assert done.status_code == 200 and done.json()["status"] == "decided"
    assert done.json()["responder"]["username"] == "bob"
    assert [a["user"] for a in done.json()["policy"]["approvals"]] == ["alice", "bob"]


@override_settings(FORGE_POLICIES=BOT)
def test_an_agents_small_request_is_approved_by_the_rule(
        api: Api, team: dict[str, User]) -> None:
    token = ApiToken.objects.issue(team["carol"], name="bot", agent="billing-bot")[1]
    small = ask(api, token, 99)
    read = api.get("reviewer", f"/api/requests/{small['id']}").json()
    assert read["status"] == "decided" and read["decisions"][0]["type"] == "approve"
    assert read["responder"] is None and read["policy"]["decided_by"] == "policy"
    assert ask(api, token, 100)["status"] == "pending"


def test_forge_policies_is_checked_at_start() -> None:
    bad = [{"p": {"nodes": ["signoff"]}}, {"p": {"nodes": ["a/b"], "approvals": 0}},
           {"p": {"nodes": ["a/b"], "aprovals": 2}}, {"p": {}},
           {"p": {"nodes": ["a/b"], "auto_approve": {"field": "x", "like": "y"}}},
           {"p": {"nodes": ["a/b"], "escalate_after_s": 5}},
           {"p": {"nodes": ["a/b"]}, "q": {"nodes": ["a/b"]}}, "{not json", ["p"]]
    for raw in bad:
        with override_settings(FORGE_POLICIES=raw):
            [error] = check_policies()
            assert error.id == "forgeui.E010" and error.level == checks.ERROR, raw
    with override_settings(FORGE_POLICIES={"p": {"nodes": ["nope/x"]}}):
        [warning] = check_policies()
        assert warning.id == "forgeui.W010"
    with override_settings(FORGE_POLICIES=FOUR_EYES):
        assert check_policies() == []
