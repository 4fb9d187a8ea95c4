"""Assignment and claims: who may answer, through services, API, pages, websocket.

Interrupts come from real runs of ``tests.forgeui.graphs:custom``, whose payload the test
chooses (``{"assignees": ...}``); tasks run on commit (``tests.settings``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group, User
from django.test import Client

from forgeui.models import AuditEntry, Interrupt, InterruptStatus, SteeringNote
from forgeui.runs import services
from forgeui.runs.exceptions import AlreadyClaimed, Forbidden, InvalidRequest
from runtime.errors import StaleResumeTarget
from tests.forgeui.apiclient import Api
from tests.forgeui.inbox.test_consumers import Connect, connect, cookies, frame_with  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def pause(users: dict[str, User], **options: Any) -> Interrupt:
    started = services.start_run(users["supervisor"], "custom", {"options": options})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """Two more reviewers, ``alice`` in group ``finance`` and ``bob`` in none."""
    reviewers = Group.objects.get(name="reviewer")
    finance = Group.objects.create(name="finance")
    alice = User.objects.create_user("alice", password="alice")
    alice.groups.add(reviewers, finance)
    bob = User.objects.create_user("bob", password="bob")
    bob.groups.add(reviewers)
    return {**users, "alice": alice, "bob": bob}


def test_interrupt_assignees_are_read_when_the_row_is_created(team: dict[str, User]) -> None:
    interrupt = pause(team, assignees={"users": ["bob"], "groups": ["finance"]})
    assert interrupt.assigned_users == ["bob"] and interrupt.assigned_groups == ["finance"]


def test_assignees_in_a_payload_are_data_not_instructions(team: dict[str, User]) -> None:
    started = services.start_run(team["supervisor"], "custom", {"payload": {
        "assignees": {"users": ["bob"]}}})
    interrupt = Interrupt.objects.of_tree(started.thread_id).pending().get()
    assert interrupt.assignees == "" and interrupt.payload["assignees"] == {"users": ["bob"]}
    services.answer_interrupt(team["alice"], interrupt.pk, True)  # not only bob may


def test_only_assignees_may_answer(team: dict[str, User]) -> None:
    interrupt = pause(team, assignees={"groups": ["finance"]})
    with pytest.raises(Forbidden, match="assigned to group finance"):
        services.answer_interrupt(team["bob"], interrupt.pk, True)
    denied = AuditEntry.objects.get(action="answer.denied")
    assert denied.actor == team["bob"] and denied.object_id == interrupt.pk
    services.answer_interrupt(team["alice"], interrupt.pk, True)
    assert Interrupt.objects.get(pk=interrupt.pk).answered_by == team["alice"]


def test_a_claim_keeps_others_out_until_released(team: dict[str, User]) -> None:
    interrupt = pause(team)
    services.claim_interrupt(team["alice"], interrupt.pk)
    services.claim_interrupt(team["alice"], interrupt.pk)  # again: nothing changes
    with pytest.raises(AlreadyClaimed, match="already claimed by alice"):
        services.claim_interrupt(team["bob"], interrupt.pk)
    with pytest.raises(Forbidden, match="claimed by alice"):
        services.answer_interrupt(team["bob"], interrupt.pk, True)
    with pytest.raises(Forbidden):  # only the claimer or a supervisor releases
        services.release_interrupt(team["bob"], interrupt.pk)
    services.release_interrupt(team["alice"], interrupt.pk)
    services.claim_interrupt(team["bob"], interrupt.pk)
    services.release_interrupt(team["supervisor"], interrupt.pk)  # anyone's
    services.answer_interrupt(team["alice"], interrupt.pk, False)
    actions = list(AuditEntry.objects.filter(object_id=interrupt.pk).order_by("id")
                   .values_list("action", "actor__username"))
    assert [a for a in actions if a[0].startswith("interrupt.")] == [
        ("interrupt.claim", "alice"), ("interrupt.release", "alice"),
        ("interrupt.claim", "bob"), ("interrupt.release", "supervisor")]


def test_nobody_outside_the_assignees_claims_an_interrupt(team: dict[str, User]) -> None:
    interrupt = pause(team, assignees={"groups": ["finance"]})
    with pytest.raises(Forbidden, match="assigned to group finance"):
        services.claim_interrupt(team["bob"], interrupt.pk)
    with pytest.raises(Forbidden, match="assigned to group finance"):
        services.answer_interrupt(team["bob"], interrupt.pk, True)
    row = Interrupt.objects.get(pk=interrupt.pk)
    assert row.claimed_by is None and row.status == InterruptStatus.PENDING
    assert not AuditEntry.objects.filter(action="interrupt.claim").exists()
    services.claim_interrupt(team["alice"], interrupt.pk)
    services.answer_interrupt(team["alice"], interrupt.pk, True)


def test_a_note_beside_an_open_sibling_never_reaches_a_task_assigned_to_others(
        team: dict[str, User]) -> None:
    started = services.start_run(team["supervisor"], "signoffs", {})
    asked = {i.node: i for i in Interrupt.objects.of_tree(started.thread_id).pending()}
    legal, finance = asked["legal"], asked["finance"]
    services.assign_interrupt(team["supervisor"], finance.pk, [], ["finance"])
    with pytest.raises(Forbidden, match="assigned to group finance"):
        services.add_steering_note(team["bob"], legal.run_id, "to the whole run")
    with pytest.raises(Forbidden, match="assigned to group finance"):
        services.add_steering_note(team["bob"], legal.run_id, "to finance",
                                   task_id=finance.task_id)
    note = services.add_steering_note(team["bob"], legal.run_id, "legal only",
                                      interrupt_id=legal.pk)
    note.refresh_from_db()
    assert note.outcome == "applied" and note.task_id == legal.task_id
    services.answer_interrupt(team["alice"], finance.pk, True)
    services.answer_interrupt(team["bob"], legal.pk, True)
    run = legal.run
    run.refresh_from_db()
    assert run.output["signoffs"]["legal"]["steering"] == ["legal only"]
    assert run.output["signoffs"]["finance"]["steering"] == []


def test_supervisors_assign_and_a_claim_outside_the_assignees_ends(
        team: dict[str, User]) -> None:
    interrupt = pause(team)
    services.claim_interrupt(team["bob"], interrupt.pk)
    with pytest.raises(Forbidden):
        services.assign_interrupt(team["reviewer"], interrupt.pk, ["alice"], [])
    with pytest.raises(InvalidRequest, match="no such users: carol"):
        services.assign_interrupt(team["supervisor"], interrupt.pk, ["carol"], [])
    assigned = services.assign_interrupt(team["supervisor"], interrupt.pk, [], ["finance"])
    assert assigned.claimed_by is None and assigned.assigned_groups == ["finance"]
    entry = AuditEntry.objects.get(action="interrupt.assign")
    assert entry.detail["groups"] == ["finance"] and entry.detail["claim_ended"]


def test_tabs_assigned_queue_and_done(team: dict[str, User]) -> None:
    from forgeui.team.assignment import Viewer

    mine = pause(team, assignees={"users": ["alice"]})
    theirs = pause(team, assignees={"users": ["bob"]})
    open_ = pause(team)
    alice = Viewer.of(team["alice"])
    assert set(Interrupt.objects.assigned_to(alice)) == {mine}
    assert set(Interrupt.objects.queue_for(alice)) == {mine, open_}
    services.claim_interrupt(team["bob"], open_.pk)
    assert set(Interrupt.objects.queue_for(alice)) == {mine}
    assert set(Interrupt.objects.assigned_to(Viewer.of(team["bob"]))) == {theirs, open_}
    services.answer_interrupt(team["alice"], mine.pk, True)
    assert list(Interrupt.objects.done_by(team["alice"].pk)) == [mine]


# -- API -----------------------------------------------------------------------------------


def test_api_claim_release_assign_and_403(team: dict[str, User]) -> None:
    api = Api(team)
    interrupt = pause(team)
    claimed = api.post("alice", f"/api/interrupts/{interrupt.pk}/claim")
    assert claimed.status_code == 200 and claimed.json()["claimed_by"] == "alice"
    taken = api.post("bob", f"/api/interrupts/{interrupt.pk}/claim")
    assert taken.status_code == 409 and taken.json()["claimed_by"] == "alice"
    refused = api.post("bob", f"/api/interrupts/{interrupt.pk}/resume", {"value": True})
    assert refused.status_code == 403 and "claimed by alice" in refused.json()["detail"]
    assert api.post("alice", f"/api/interrupts/{interrupt.pk}/release").json()["claimed_by"] is None
    assert api.post("reviewer", f"/api/interrupts/{interrupt.pk}/assign",
                    {"users": ["bob"]}).status_code == 403
    assigned = api.post("supervisor", f"/api/interrupts/{interrupt.pk}/assign",
                        {"users": ["bob"], "groups": []})
    assert assigned.status_code == 200
    assert assigned.json()["assignees"] == {"users": ["bob"], "groups": []}
    assert api.post("alice", f"/api/interrupts/{interrupt.pk}/resume",
                    {"value": True}).status_code == 403
    queue = api.get("bob", "/api/interrupts", tab="queue").json()["items"]
    assert [i["id"] for i in queue] == [interrupt.pk]
    assert api.get("alice", "/api/interrupts", tab="queue").json()["count"] == 0
    assert api.post("bob", f"/api/interrupts/{interrupt.pk}/resume",
                    {"value": True}).status_code == 202
    done = api.get("bob", "/api/interrupts", tab="done").json()["items"]
    assert [i["id"] for i in done] == [interrupt.pk]


# -- pages ---------------------------------------------------------------------------------


def client(user: User) -> Client:
    made = Client()
    made.force_login(user)
    return made


def test_answer_buttons_are_absent_for_interrupts_assigned_to_others(
        team: dict[str, User]) -> None:
    interrupt = pause(team, assignees={"users": ["alice"]})
    row = re.compile(rf'<tr id="int-{interrupt.pk}".*?</tr>', re.S)
    bob_row = row.search(client(team["bob"]).get("/").content.decode()).group(0)
    assert 'value="approve"' not in bob_row and "btn-claim" not in bob_row
    assert "for alice" in bob_row and "assignees" not in bob_row
    alice_row = row.search(client(team["alice"]).get("/").content.decode()).group(0)
    assert 'value="approve"' in alice_row and "btn-claim" in alice_row
    detail = client(team["bob"]).get(f"/interrupts/{interrupt.pk}/").content.decode()
    assert "Read-only for you" in detail and 'name="action"' not in detail
    posted = client(team["bob"]).post(f"/interrupts/{interrupt.pk}/answer/",
                                      {"action": "approve"})
    assert posted.status_code == 403
    assert Interrupt.objects.get(pk=interrupt.pk).status == InterruptStatus.PENDING


def test_claim_from_a_row_and_the_tabs(team: dict[str, User]) -> None:
    interrupt = pause(team)
    alice = client(team["alice"])
    row = alice.post(f"/interrupts/{interrupt.pk}/claim/", {"op": "claim"},
                     headers={"HX-Request": "true"}).content.decode()
    assert "claimed by alice" in row and "Release" in row
    assert interrupt.pk in alice.get("/?tab=assigned").content.decode()
    bob = client(team["bob"])
    assert interrupt.pk not in bob.get("/?tab=queue").content.decode()
    assert interrupt.pk in bob.get("/").content.decode()  # "All pending" still lists it
    alice.post(f"/interrupts/{interrupt.pk}/claim/", {"op": "release"})
    assert interrupt.pk in bob.get("/?tab=queue").content.decode()


# -- websocket -----------------------------------------------------------------------------

ROW_OF = r'<tr id="int-{}" class="row'
GONE_OF = r'<tr id="int-{}" hx-swap-oob="delete">'


async def test_a_claim_moves_the_row_between_tabs_live(team: dict[str, User],
                                                       cookies: dict[str, str],  # noqa: F811
                                                       connect: Connect) -> None:  # noqa: F811
    from tests.forgeui.inbox.test_consumers import session_cookie

    interrupt = await sync_to_async(pause)(team)
    bob_cookie = await sync_to_async(session_cookie)(team["bob"])
    alice_cookie = await sync_to_async(session_cookie)(team["alice"])
    queue, ok, _ = await connect(bob_cookie, "/ws/inbox/?tab=queue")
    mine, ok2, _ = await connect(alice_cookie, "/ws/inbox/?tab=assigned")
    assert ok and ok2
    await queue.send_json_to({"after": 0})
    await mine.send_json_to({"after": 0})
    await frame_with(queue, re.compile(ROW_OF.format(interrupt.pk)))
    await sync_to_async(services.claim_interrupt)(team["alice"], interrupt.pk)
    await frame_with(queue, re.compile(GONE_OF.format(interrupt.pk)))
    arrived = await frame_with(mine, re.compile(ROW_OF.format(interrupt.pk)))
    assert "Release" in arrived and "claimed by alice" in arrived


def test_steering_notes_follow_the_answer_rules(team: dict[str, User]) -> None:
    theirs = pause(team, assignees={"users": ["bob"]})
    for target in ({}, {"interrupt_id": theirs.pk}, {"task_id": theirs.task_id}):
        with pytest.raises(Forbidden, match="assigned to bob"):
            services.add_steering_note(team["alice"], theirs.run_id, "do it my way", **target)
    assert not SteeringNote.objects.exists()
    services.add_steering_note(team["bob"], theirs.run_id, "fine by me")

    claimed = pause(team)
    services.claim_interrupt(team["bob"], claimed.pk)
    with pytest.raises(Forbidden, match="claimed by bob"):
        services.add_steering_note(team["alice"], claimed.run_id, "mine now")
    services.answer_interrupt(team["bob"], claimed.pk, True)
    with pytest.raises(StaleResumeTarget, match="has ended"):  # the run completed
        services.add_steering_note(team["bob"], claimed.run_id, "too late")
    assert SteeringNote.objects.count() == 1


def test_the_api_refuses_a_note_on_a_completed_run_with_409(team: dict[str, User]) -> None:
    interrupt = pause(team)
    services.answer_interrupt(team["alice"], interrupt.pk, True)
    response = Api(team).post("alice", "/api/steering", {"run_id": interrupt.run_id,
                                                        "text": "after the fact"})
    assert response.status_code == 409 and response.json()["latest"]["status"] == "completed"
