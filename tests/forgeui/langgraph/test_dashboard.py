"""What the dashboard does to any run, done to a LangGraph run: stale answers, steering,
cancel, fork, claims, deadlines, targeting a subgraph by namespace, the timeline and the
records."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from forgeui.models import ApiToken, AuditEntry, Interrupt, SteeringNote
from forgeui.runs.deadlines import expire_interrupts
from tests.forgeui.apiclient import Api


def answer(api: Api, interrupt_id: str, value: object, who: str = "reviewer",
           **extra: object) -> object:
    return api.post(who, f"/api/interrupts/{interrupt_id}/resume", {"value": value, **extra})


def test_a_second_answer_is_stale(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    assert answer(api, first["id"], "500").status_code == 202
    late = answer(api, first["id"], "900", who="supervisor")
    assert late.status_code == 409
    body = late.json()
    assert body["answered_by"] == "reviewer"
    [second] = api.pending_of(started)  # the same node's next interrupt() is a new row
    assert second["payload"] == {"question": "pay 500?"}
    assert second["id"] != first["id"] and second["order"] == 1
    assert body["latest"]["interrupts"] == [second["id"]]


def test_an_answer_for_an_old_checkpoint_is_stale(api: Api) -> None:
    started = api.start("lg_parallel", {"log": []})
    left, right = sorted(api.pending_of(started), key=lambda i: i["node"])
    seen_at = right["checkpoint_id"]
    assert answer(api, left["id"], "L").status_code == 202
    [still] = api.pending_of(started)
    assert still["id"] == right["id"]
    refused = answer(api, right["id"], "R", expected_checkpoint_id=seen_at + "x")
    assert refused.status_code == 409
    assert answer(api, right["id"], "R", expected_checkpoint_id=still["checkpoint_id"]
                  ).status_code == 202
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["output"] == {"log": ["left=L", "right=R", "joined"]}


def test_steering_is_kept_apart_from_the_answer(api: Api) -> None:
    started = api.start("lg_subgraph", {"log": []})
    [review] = api.pending_of(started)
    assert answer(api, review["id"], "fine", steering="check the totals").status_code == 202
    [finish] = api.pending_of(started)
    assert answer(api, finish["id"], "done").status_code == 202
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert "review=fine" in run["output"]["log"]
    assert not any("totals" in line for line in run["output"]["log"])
    note = SteeringNote.objects.get()
    assert note.text == "check the totals" and note.outcome == "applied"
    checkpoints = api.get("auditor", f"/api/threads/{started['thread_id']}/checkpoints")
    assert checkpoints.status_code == 200


def test_a_subgraph_interrupt_is_targeted_by_namespace(api: Api) -> None:
    started = api.start("lg_subgraph", {"log": []})
    [review] = api.pending_of(started)
    wrong = api.post("supervisor", "/api/resume", {
        "run_id": started["run_id"], "namespace": ["lg_subgraph", "elsewhere:1"],
        "value": "x"})
    assert wrong.status_code == 409
    targeted = api.post("supervisor", "/api/resume", {
        "run_id": started["run_id"], "namespace": review["namespace"], "value": "ok"})
    assert targeted.status_code == 202, targeted.content
    [finish] = api.pending_of(started)
    assert finish["node"] == "finish" and finish["namespace"] == ["lg_subgraph"]


def test_cancel_ends_the_run_and_its_interrupts(api: Api) -> None:
    started = api.start("lg_parallel", {"log": []})
    pending = api.pending_of(started)
    response = api.post("supervisor", f"/api/runs/{started['run_id']}/cancel", {})
    assert response.status_code == 202
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "cancelled"
    assert set(Interrupt.objects.filter(pk__in=[i["id"] for i in pending])
               .values_list("status", flat=True)) == {"cancelled"}
    assert answer(api, pending[0]["id"], "late").status_code == 409


def test_a_fork_goes_on_from_the_chosen_checkpoint(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    assert answer(api, first["id"], "500").status_code == 202
    response = api.post("reviewer", f"/api/threads/{started['thread_id']}/fork",
                        {"checkpoint_id": first["checkpoint_id"]})
    assert response.status_code == 201, response.content
    fork = response.json()["thread_id"]
    [again] = api.pending(root_thread_id=fork)
    assert again["payload"] == {"question": "amount?"}  # asked anew, with a new id
    assert again["id"] != first["id"]
    assert answer(api, again["id"], "700").status_code == 202
    [pay] = api.pending(root_thread_id=fork)
    assert pay["payload"] == {"question": "pay 700?"}
    [original] = api.pending_of(started)
    assert original["payload"] == {"question": "pay 500?"}  # the original is untouched


def test_a_claimed_interrupt_takes_only_its_claimers_answer(api: Api) -> None:
    other = User.objects.create_user("other", password="other")
    other.groups.add(Group.objects.get(name="reviewer"))
    api.users["other"] = other
    api.tokens["other"] = ApiToken.objects.issue(other, name="tests")[1]
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    assert api.post("reviewer", f"/api/interrupts/{first['id']}/claim").status_code == 200
    assert answer(api, first["id"], "1", who="other").status_code in (403, 409)
    assert answer(api, first["id"], "500").status_code == 202


def test_the_pages_and_records_show_a_langgraph_run(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    assert answer(api, first["id"], "500").status_code == 202
    client = Client()
    client.force_login(api.users["auditor"])
    for path in (f"/runs/{started['run_id']}/", f"/threads/{started['thread_id']}/",
                 "/audit/decisions/", "/", f"/interrupts/{first['id']}/"):
        assert client.get(path).status_code == 200, path
    assert "500" in client.get("/audit/decisions/").content.decode()
    assert AuditEntry.objects.filter(action="answer.applied", object_id=first["id"]).exists()
    # The graph's values, read where ForgeSaver keeps them, as the latest state.
    [second] = api.pending_of(started)
    page = client.get(f"/interrupts/{second['id']}/").content.decode()
    assert "Latest state (1 key)" in page and "log" in page
    # Each checkpoint's state, for the timeline and the API, is the graph's values then.
    checkpoints = api.get("auditor", f"/api/threads/{started['thread_id']}/checkpoints")
    latest = checkpoints.json()["items"][-1]
    assert latest["state"] == api.get(
        "auditor", f"/api/checkpoints/{latest['id']}/state").json()["state"]
    assert set(latest["state"]) == {"log"}
    timeline = client.get(f"/threads/{started['thread_id']}/").content.decode()
    assert "log" in timeline.split('class="diff', 1)[1]


def test_a_deadline_answers_with_the_registered_default(api: Api) -> None:
    started = api.start("lg_deadline", {"log": []})
    [first] = api.pending_of(started)
    assert first["deadline_at"] is not None
    assert expire_interrupts(timezone.now() + timedelta(seconds=30)) == []  # not yet
    [expired] = expire_interrupts(timezone.now() + timedelta(seconds=61))
    assert (expired.interrupt_id, expired.outcome) == (first["id"], "defaulted")
    [second] = api.pending_of(started)
    assert second["payload"] == {"question": "pay 1?"}  # interrupt() returned the default
    assert AuditEntry.objects.filter(action="interrupt.expired", object_id=first["id"]).exists()


def test_without_a_registered_deadline_nothing_expires(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    assert first["deadline_at"] is None
    assert expire_interrupts(timezone.now() + timedelta(days=400)) == []


def test_a_breakpoint_is_continued_or_cancelled_with_a_reason(api: Api) -> None:
    started = api.start("lg_breakpoint", {"log": []})
    [paused] = api.pending_of(started)
    assert (paused["kind"], paused["node"]) == ("before", "send")
    assert paused["payload"] == {"kind": "before", "node": "send",
                                 "input": {"log": ["drafted"]}}
    response = api.post("reviewer", f"/api/interrupts/{paused['id']}/cancel",
                        {"reason": "wrong recipient"})
    assert response.status_code == 202, response.content
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "cancelled"
    assert "sent" not in str(run)  # the guarded node never ran


def test_a_fork_with_an_edited_input_updates_the_state_and_runs_on(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    # An edited input is a new start: a supervisor's, who may start runs.
    response = api.post("supervisor", f"/api/threads/{started['thread_id']}/fork",
                        {"inputs": {first["id"]: {"log": ["edited"]}}})
    assert response.status_code == 201, response.content
    fork = response.json()["thread_id"]
    [again] = api.pending(root_thread_id=fork)
    assert again["payload"] == {"question": "amount?"} and again["id"] != first["id"]
    assert answer(api, again["id"], "700").status_code == 202
    [pay] = api.pending(root_thread_id=fork)
    assert answer(api, pay["id"], "yes").status_code == 202
    # Past the copied checkpoint: the fork's later checkpoints are its latest.
    [confirm] = api.pending(root_thread_id=fork)
    assert confirm["payload"] == {"question": "confirm"}
    assert answer(api, confirm["id"], "ok").status_code == 202
    run = api.get("auditor", f"/api/runs/{confirm['run_id']}").json()
    assert run["status"] == "completed"
    # update_state goes through the reducer: the edit is appended, as LangGraph does.
    assert run["output"] == {"log": ["edited", "amount=700", "approved=yes", "confirm=ok"]}
    edit = AuditEntry.objects.get(action="fork.edit", thread_id=fork)
    assert edit.detail["edits"][0]["value"] == {"log": ["edited"]}
    [original] = api.pending_of(started)
    assert original["id"] == first["id"]  # the original is untouched


def test_a_fork_edit_langgraph_cannot_apply_is_refused_with_a_reason(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    inner = api.start("lg_subgraph", {"log": []})
    [review] = api.pending_of(inner)
    for thread, edit, reason in (
            (started, {"answers": {first["id"]: "9"}}, "no pre-filled answers"),
            (started, {"inputs": {first["id"]: {"amount": 9}}}, "'amount' is not a key"),
            (started, {"inputs": {first["id"]: ["edited"]}}, "an object of state keys"),
            (inner, {"inputs": {review["id"]: {"log": []}}}, "runs in a subgraph")):
        refused = api.post("supervisor", f"/api/threads/{thread['thread_id']}/fork", edit)
        assert refused.status_code == 422, refused.content
        assert reason in refused.content.decode()
    assert not AuditEntry.objects.filter(action="thread.fork").exists()


def test_the_run_page_forks_a_langgraph_run_with_an_edited_input(api: Api) -> None:
    started = api.start("lg_two", {"log": []})
    [first] = api.pending_of(started)
    supervisor = Client()
    supervisor.force_login(api.users["supervisor"])
    page = supervisor.get(f"/runs/{started['run_id']}/").content.decode()
    assert "Fork with changes" in page and "the graph's reducers" in page
    assert "Pre-fill the answer" not in page  # a LangGraph fork takes none
    bad = supervisor.post(f"/runs/{started['run_id']}/fork/",
                          {"interrupt_id": first["id"], "change": "input",
                           "value": '{"amount": 1}'})
    assert bad.status_code == 422
    assert "&#x27;amount&#x27; is not a key" in bad.content.decode()
    assert '{&quot;amount&quot;: 1}' in bad.content.decode()  # what was typed is kept
    done = supervisor.post(f"/runs/{started['run_id']}/fork/",
                           {"interrupt_id": first["id"], "change": "input",
                            "value": '{"log": ["edited"]}'})
    assert done.status_code == 302
    fork = AuditEntry.objects.get(action="fork.edit").thread_id
    [again] = api.pending(root_thread_id=fork)
    assert again["payload"] == {"question": "amount?"}
