"""Acting through the API: start, answer, targeted resume, resume_map, steer, fork, cancel.

Each route: its success, each role's permission (a refusal is 403 and an audit row, and
nothing else), and its error codes.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from forgeui.models import Answer, AuditEntry, Checkpoint, Interrupt, Run, SteeringNote
from tests.forgeui.apiclient import Api, errors_at

pytestmark = pytest.mark.django_db(transaction=True)
ACCEPT = {"type": "accept", "args": None}  # the answer the example graphs' actions take


def rows() -> dict[str, int]:
    """What a refused request must leave untouched."""
    return {"checkpoints": Checkpoint.objects.count(), "answers": Answer.objects.count(),
            "notes": SteeringNote.objects.count(), "runs": Run.objects.count(),
            "pending": Interrupt.objects.pending().count()}


def assert_denied(api: Api, who: str, method: str, path: str, body: Any = None) -> None:
    before, audited = rows(), AuditEntry.objects.filter(action__endswith=".denied").count()
    response = api.post(who, path, body) if method == "POST" else api.get(who, path)
    assert response.status_code == 403, (who, path, response.content)
    assert "needs one of the roles" in response.json()["detail"]
    assert rows() == before
    denied = AuditEntry.objects.filter(action__endswith=".denied")
    assert denied.count() == audited + 1
    assert denied.order_by("-id").first().actor == api.users[who]


# -- POST /api/runs ------------------------------------------------------------------------


def test_supervisors_and_superusers_start_runs(api: Api) -> None:
    for who in ("supervisor", "admin"):
        response = api.post(who, "/api/runs", {"graph": "transfer", "input": {"amount": 4}})
        assert response.status_code == 201
        body = response.json()
        assert set(body) == {"run_id", "thread_id", "status"}
        assert body["status"] == "interrupted"
        run = Run.objects.get(pk=body["run_id"])
        assert run.started_by == api.users[who] and run.thread_id == body["thread_id"]


def test_a_chosen_thread_id_is_used(api: Api) -> None:
    response = api.post("supervisor", "/api/runs", {"graph": "deploy", "thread_id": "release-7"})
    assert response.status_code == 201 and response.json()["thread_id"] == "release-7"


def test_reviewers_and_auditors_cannot_start_runs(api: Api) -> None:
    for who in ("reviewer", "auditor"):
        assert_denied(api, who, "POST", "/api/runs", {"graph": "transfer"})


def test_start_run_refusals_name_the_field(api: Api) -> None:
    response = api.post("supervisor", "/api/runs", {"graph": "nope"})
    assert response.status_code == 422
    assert errors_at(response) == [["body", "graph"]]
    assert "registered graphs" in response.json()["detail"][0]["msg"]
    response = api.post("supervisor", "/api/runs", {"graph": "transfer", "thread_id": "a/b"})
    assert response.status_code == 422 and errors_at(response)[0][-1] == "thread_id"
    taken = api.start("transfer")
    again = api.post("supervisor", "/api/runs", {"graph": "transfer",
                                                 "thread_id": taken["thread_id"]})
    assert again.status_code == 422 and "already has a interrupted run" in again.content.decode()
    assert Run.objects.count() == 1


def test_an_approval_request_cannot_be_started_as_a_run(api: Api) -> None:
    # Its input would set its own deadline rule; requests come only through /api/requests.
    response = api.post("supervisor", "/api/runs", {"graph": "forge.request", "input": {
        "actions": [{"name": "pay", "args": {}}], "on_deadline": "approve", "deadline_s": 1}})
    assert response.status_code == 422
    assert "POST /api/requests" in response.content.decode()
    assert Run.objects.count() == 0


# -- POST /api/interrupts/{id}/resume --------------------------------------------------------


def test_an_answer_is_accepted_with_202_then_applied(api: Api) -> None:
    started = api.start("transfer", {"amount": 5})
    (interrupt,) = api.pending_of(started)
    response = api.post("reviewer", f"/api/interrupts/{interrupt['id']}/resume",
                        {"value": {"ok": True}, "steering": "check the IBAN"})
    assert response.status_code == 202
    body = response.json()
    assert body == {"answer_id": body["answer_id"], "interrupt_id": interrupt["id"],
                    "run_id": started["run_id"], "thread_id": started["thread_id"],
                    "status": "accepted", "approval_id": None, "approvals": None}
    answer = Answer.objects.get(pk=body["answer_id"])
    assert answer.value == {"ok": True} and answer.user == api.users["reviewer"]
    note = SteeringNote.objects.get(answer=answer)
    assert note.text == "check the IBAN" and answer.value == {"ok": True}  # kept apart
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "completed" and run["output"]["approved"] == {"ok": True}
    entry = AuditEntry.objects.get(action="answer")
    assert entry.actor == api.users["reviewer"] and entry.object_id == interrupt["id"]
    assert entry.before_checkpoint_id == interrupt["checkpoint_id"]


def test_auditors_cannot_answer(api: Api) -> None:
    started = api.start("transfer")
    (interrupt,) = api.pending_of(started)
    assert_denied(api, "auditor", "POST", f"/api/interrupts/{interrupt['id']}/resume",
                  {"value": True})


def test_answers_are_checked_against_the_answer_schema(api: Api) -> None:
    started = api.start("parallel_approvals", {"amount": 10})
    finance = next(i for i in api.pending_of(started) if i["node"] == "finance")
    path = f"/api/interrupts/{finance['id']}/resume"
    before = rows()
    response = api.post("reviewer", path, {"value": {"approved": True, "limit": -1}})
    assert response.status_code == 422
    assert errors_at(response) == [["body", "value", "limit"]]
    assert "minimum" in response.json()["detail"][0]["msg"]
    response = api.post("reviewer", path, {"value": {"limit": 3}})
    assert response.status_code == 422 and "'approved' is a required property" in (
        response.json()["detail"][0]["msg"])
    assert rows() == before
    assert api.post("reviewer", path, {"value": {"approved": True, "limit": 3}}
                    ).status_code == 202


def test_resume_of_an_unknown_interrupt_is_404(api: Api) -> None:
    response = api.post("reviewer", "/api/interrupts/nope/resume", {"value": 1})
    assert response.status_code == 404 and "nope" in response.json()["detail"]


def test_a_second_answer_is_409_naming_who_answered_when(api: Api) -> None:
    started = api.start("transfer")
    (interrupt,) = api.pending_of(started)
    path = f"/api/interrupts/{interrupt['id']}/resume"
    assert api.post("reviewer", path, {"value": True}).status_code == 202
    before = rows()
    response = api.post("supervisor", path, {"value": False})
    assert response.status_code == 409
    body = response.json()
    assert body["answered_by"] == "reviewer" and body["answered_at"]
    assert body["status"] == "answered" and body["interrupt_id"] == interrupt["id"]
    latest = body["latest"]
    assert latest["run_id"] == started["run_id"] and latest["status"] == "completed"
    assert latest["checkpoint_id"] == Run.objects.get(pk=started["run_id"]).latest_checkpoint_id
    assert latest["interrupts"] == []
    assert rows() == before
    refused = AuditEntry.objects.get(action="answer.refused")
    assert refused.actor == api.users["supervisor"]


def test_a_stale_expected_checkpoint_is_409_with_the_latest(api: Api) -> None:
    started = api.start("transfer")
    (interrupt,) = api.pending_of(started)
    response = api.post("reviewer", f"/api/interrupts/{interrupt['id']}/resume",
                        {"value": True, "expected_checkpoint_id": "an-old-one"})
    assert response.status_code == 409
    body = response.json()
    assert body["status"] == "pending" and body["answered_by"] is None
    assert body["latest"]["interrupts"] == [interrupt["id"]]
    assert Interrupt.objects.get(pk=interrupt["id"]).status == "pending"
    ok = api.post("reviewer", f"/api/interrupts/{interrupt['id']}/resume",
                  {"value": True, "expected_checkpoint_id": interrupt["checkpoint_id"]})
    assert ok.status_code == 202


def test_child_policy_cancel_ends_the_pending_children(api: Api) -> None:
    started = api.start("deploy", {"version": "1.2.3"})
    (gate,) = api.pending_of(started)
    response = api.post("reviewer", f"/api/interrupts/{gate['id']}/resume",
                        {"value": "go", "child_policy": "cancel"})
    assert response.status_code == 202
    assert Answer.objects.get().child_policy == "cancel"
    bad = api.post("reviewer", f"/api/interrupts/{gate['id']}/resume",
                   {"value": "go", "child_policy": "abandon"})
    assert bad.status_code == 422 and errors_at(bad)[0][-1] == "child_policy"


# -- POST /api/resume (targeted) -------------------------------------------------------------


def test_targeted_resume_answers_one_sub_agent_and_leaves_its_sibling(api: Api) -> None:
    started = api.start("supervisor", {"topic": "Q1"})
    writer = next(i for i in api.pending_of(started) if i["sub_agent_id"] == "writer_agent")
    response = api.post("supervisor", "/api/resume",
                        {"run_id": writer["run_id"], "namespace": ["supervisor", "writer_agent"],
                         "value": ACCEPT, "steering": "shorter please"})
    assert response.status_code == 202 and response.json()["interrupt_id"] == writer["id"]
    tree = {n["sub_agent_id"]: n for n in
            api.get("auditor", f"/api/runs/{started['run_id']}").json()["tree"]}
    assert tree["writer_agent"]["status"] == "completed"
    assert tree["research_agent"]["status"] == "interrupted"
    assert len(tree["research_agent"]["interrupts"]) == 1


def test_targeted_resume_by_task_and_interrupt_id(api: Api) -> None:
    started = api.start("parallel_approvals", {})
    legal, finance = sorted(api.pending_of(started), key=lambda i: i["node"] != "legal")
    by_task = api.post("supervisor", "/api/resume", {"run_id": legal["run_id"],
                                                     "task_id": legal["task_id"],
                                                     "value": ACCEPT})
    assert by_task.status_code == 202 and by_task.json()["interrupt_id"] == legal["id"]
    by_id = api.post("admin", "/api/resume", {"run_id": finance["run_id"],
                                              "interrupt_id": finance["id"],
                                              "value": {"approved": False}})
    assert by_id.status_code == 202


def test_targeted_resume_refusals(api: Api) -> None:
    started = api.start("parallel_approvals", {})
    run_id = started["run_id"]
    assert_denied(api, "reviewer", "POST", "/api/resume", {"run_id": run_id, "value": 1})
    ambiguous = api.post("supervisor", "/api/resume", {"run_id": run_id, "value": 1})
    assert ambiguous.status_code == 409
    assert len(ambiguous.json()["latest"]["interrupts"]) == 2
    wrong_ns = api.post("supervisor", "/api/resume",
                        {"run_id": run_id, "namespace": ["elsewhere"], "value": 1})
    assert wrong_ns.status_code == 409 and wrong_ns.json()["latest"]["run_id"] == run_id
    no_task = api.post("supervisor", "/api/resume",
                       {"run_id": run_id, "task_id": "no-such-task", "value": 1})
    assert no_task.status_code == 409
    unknown = api.post("supervisor", "/api/resume", {"run_id": "nope", "value": 1})
    assert unknown.status_code == 404
    assert Answer.objects.count() == 0


# -- POST /api/resume_map --------------------------------------------------------------------


def test_resume_map_answers_several_at_once(api: Api) -> None:
    started = api.start("parallel_approvals", {"amount": 2})
    answers = {i["id"]: ({"approved": True} if i["node"] == "finance" else ACCEPT)
               for i in api.pending_of(started)}
    response = api.post("reviewer", "/api/resume_map",
                        {"thread_id": started["thread_id"], "answers": answers})
    assert response.status_code == 202
    body = response.json()
    assert body["count"] == 2 and {a["interrupt_id"] for a in body["items"]} == set(answers)
    assert api.get("auditor", f"/api/runs/{started['run_id']}").json()["status"] == "completed"


def test_resume_map_refusals_record_nothing(api: Api) -> None:
    started = api.start("parallel_approvals", {})
    legal, finance = sorted(api.pending_of(started), key=lambda i: i["node"] != "legal")
    other = api.start("transfer")
    path, thread = "/api/resume_map", started["thread_id"]
    before = rows()
    unknown = api.post("reviewer", path, {"thread_id": thread,
                                          "answers": {legal["id"]: 1, "nope": 2}})
    assert unknown.status_code == 404
    foreign = api.pending_of(other)[0]["id"]
    assert api.post("reviewer", path, {"thread_id": thread,
                                       "answers": {foreign: 1}}).status_code == 404
    invalid = api.post("reviewer", path, {"thread_id": thread,
                                          "answers": {legal["id"]: ACCEPT, finance["id"]: {}}})
    assert invalid.status_code == 422
    assert errors_at(invalid) == [["body", "answers", finance["id"]]]
    empty = api.post("reviewer", path, {"thread_id": thread, "answers": {}})
    assert empty.status_code == 422
    assert rows() == before
    assert_denied(api, "auditor", "POST", path, {"thread_id": thread,
                                                 "answers": {legal["id"]: 1}})
    api.post("reviewer", f"/api/interrupts/{legal['id']}/resume", {"value": ACCEPT})
    before = rows()
    stale = api.post("reviewer", path, {"thread_id": thread,
                                        "answers": {legal["id"]: ACCEPT,
                                                    finance["id"]: {"approved": True}}})
    assert stale.status_code == 409 and stale.json()["answered_by"] == "reviewer"
    assert rows() == before  # all or nothing: finance is still pending


# -- POST /api/steering ------------------------------------------------------------------------


def test_steering_notes_are_stored_apart(api: Api) -> None:
    started = api.start("supervisor", {})
    research = next(i for i in api.pending_of(started) if i["sub_agent_id"] == "research_agent")
    response = api.post("reviewer", "/api/steering",
                        {"run_id": research["run_id"], "task_id": research["task_id"],
                         "interrupt_id": research["id"], "text": "prefer primary sources"})
    assert response.status_code == 201
    body = response.json()
    assert body["text"] == "prefer primary sources" and body["user"] == "reviewer"
    assert body["run_id"] == research["run_id"] and body["interrupt_id"] == research["id"]
    assert not Answer.objects.exists()
    assert AuditEntry.objects.filter(action="steering.note", run_id=research["run_id"]).exists()


def test_steering_refusals(api: Api) -> None:
    started = api.start("transfer")
    run_id = started["run_id"]
    assert_denied(api, "auditor", "POST", "/api/steering", {"run_id": run_id, "text": "hi"})
    assert api.post("reviewer", "/api/steering", {"run_id": "nope", "text": "x"}
                    ).status_code == 404
    blank = api.post("reviewer", "/api/steering", {"run_id": run_id, "text": "   "})
    assert blank.status_code == 422
    empty = api.post("reviewer", "/api/steering", {"run_id": run_id, "text": ""})
    assert empty.status_code == 422 and errors_at(empty)[0][-1] == "text"
    assert not SteeringNote.objects.exists()


# -- POST /api/threads/{thread_id}/fork --------------------------------------------------------


def test_fork_from_latest_and_from_an_earlier_checkpoint(api: Api) -> None:
    started = api.start("transfer", {"amount": 1})
    thread = started["thread_id"]
    response = api.post("supervisor", f"/api/threads/{thread}/fork", {})
    assert response.status_code == 201
    new_thread = response.json()["thread_id"]
    assert new_thread != thread
    (forked,) = api.pending(root_thread_id=new_thread)
    assert api.post("reviewer", f"/api/interrupts/{forked['id']}/resume",
                    {"value": False}).status_code == 202
    assert len(api.pending_of(started)) == 1  # the original is untouched
    first = api.get("auditor", f"/api/threads/{thread}/checkpoints").json()["items"][0]
    earlier = api.post("admin", f"/api/threads/{thread}/fork", {"checkpoint_id": first["id"]})
    assert earlier.status_code == 201
    entry = AuditEntry.objects.filter(action="thread.fork").order_by("-id").first()
    assert entry.before_checkpoint_id == first["id"] and entry.after_checkpoint_id


def test_fork_refusals(api: Api) -> None:
    started = api.start("transfer")
    thread = started["thread_id"]
    assert_denied(api, "auditor", "POST", f"/api/threads/{thread}/fork", {})
    assert api.post("reviewer", f"/api/threads/{thread}/fork", {}).status_code == 201
    assert api.post("supervisor", "/api/threads/nope/fork", {}).status_code == 404
    other = api.start("deploy")
    foreign = api.get("auditor", f"/api/threads/{other['thread_id']}/checkpoints"
                      ).json()["items"][0]["id"]
    response = api.post("supervisor", f"/api/threads/{thread}/fork", {"checkpoint_id": foreign})
    assert response.status_code == 404
    assert api.post("supervisor", f"/api/threads/{thread}/fork", {"checkpoint_id": 3}
                    ).status_code == 422


# -- POST /api/runs/{run_id}/cancel ------------------------------------------------------------


def test_cancel_ends_the_run_and_its_interrupts(api: Api) -> None:
    started = api.start("supervisor", {})
    response = api.post("supervisor", f"/api/runs/{started['run_id']}/cancel")
    assert response.status_code == 202
    assert response.json() == {"run_id": started["run_id"], "status": "cancelling"}
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "cancelled"
    assert {n["status"] for n in run["tree"]} == {"cancelled"}
    assert api.pending_of(started) == []
    again = api.post("supervisor", f"/api/runs/{started['run_id']}/cancel")
    assert again.status_code == 422 and "cancelled" in again.content.decode()


def test_cancel_refusals(api: Api) -> None:
    started = api.start("transfer")
    for who in ("reviewer", "auditor"):
        assert_denied(api, who, "POST", f"/api/runs/{started['run_id']}/cancel")
    assert api.post("supervisor", "/api/runs/nope/cancel").status_code == 404


# -- the race: two people answer one interrupt at the same moment ------------------------------


@pytest.mark.parametrize("attempt", range(3))
def test_two_clients_answer_one_interrupt_one_202_one_409_naming_the_winner(
        api: Api, attempt: int) -> None:
    (interrupt,) = api.pending_of(api.start("transfer", {"amount": attempt}))
    path = f"/api/interrupts/{interrupt['id']}/resume"
    clients = {who: api.client(who) for who in ("reviewer", "supervisor")}
    start = threading.Barrier(len(clients))
    results: dict[str, Any] = {}

    def answer(who: str) -> None:
        try:
            start.wait(timeout=10)
            results[who] = clients[who].post(path, {"value": who},
                                             content_type="application/json")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=answer, args=(who,)) for who in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    statuses = {who: response.status_code for who, response in results.items()}
    assert sorted(statuses.values()) == [202, 409], statuses
    winner = next(who for who, status in statuses.items() if status == 202)
    loser = next(who for who, status in statuses.items() if status == 409)
    body = results[loser].json()
    assert body["answered_by"] == winner and body["answered_at"]
    assert body["latest"]["run_id"] == interrupt["run_id"]
    answer_row = Answer.objects.get()  # exactly one answer recorded, the winner's
    assert answer_row.user == api.users[winner] and answer_row.value == winner
    run = Run.objects.get(pk=interrupt["run_id"])
    assert run.status == "completed" and run.output["approved"] == winner


# -- a graph this site cannot load -------------------------------------------------------------


BROKEN = {"transfer": "runtime.exampels:transfer"}


def test_an_answer_to_a_run_whose_graph_cannot_be_loaded_is_refused(api: Api) -> None:
    started = api.start("transfer", {"amount": 3})
    (pending,) = api.pending_of(started)
    before = rows()
    with override_settings(FORGE_GRAPHS=BROKEN):
        response = api.post("reviewer", f"/api/interrupts/{pending['id']}/resume",
                            {"value": True})
        assert response.status_code == 409
        assert response.json()["graph"] == "transfer"
        assert "graph 'transfer' cannot be loaded" in response.json()["detail"]
        targeted = api.post("supervisor", "/api/resume",
                            {"run_id": pending["run_id"], "value": True})
        assert targeted.status_code == 409
        note = api.post("reviewer", "/api/steering", {"run_id": pending["run_id"], "text": "x"})
        assert note.status_code == 409
        started_again = api.post("supervisor", "/api/runs", {"graph": "transfer", "input": {}})
        assert started_again.status_code == 409 and started_again.json()["graph"] == "transfer"
    assert rows() == before
    assert Interrupt.objects.get(pk=pending["id"]).status == "pending"
    assert api.post("reviewer", f"/api/interrupts/{pending['id']}/resume",
                    {"value": True}).status_code == 202


def test_a_refused_answer_is_audited_compactly(api: Api) -> None:
    interrupt = api.pending_of(api.start("transfer"))[0]
    path = f"/api/interrupts/{interrupt['id']}/resume"
    assert api.post("reviewer", path, {"value": True}).status_code == 202
    huge = {"blob": "x" * 900_000}
    assert api.post("reviewer", path, {"value": huge}).status_code == 409
    refused = AuditEntry.objects.get(action="answer.refused")
    assert refused.detail["value"]["truncated"] is True
    assert refused.detail["value"]["json_chars"] > 900_000
    assert len(json.dumps(refused.detail)) < 5_000


def test_resume_map_follows_the_targeted_resume_rule_for_sub_agents(api: Api) -> None:
    started = api.start("supervisor", {"topic": "Q2"})
    writer = next(i for i in api.pending_of(started) if i["sub_agent_id"] == "writer_agent")
    targeted = {"run_id": writer["run_id"], "interrupt_id": writer["id"], "value": ACCEPT}
    mapped = {"thread_id": started["thread_id"], "answers": {writer["id"]: ACCEPT}}
    assert api.post("reviewer", "/api/resume", targeted).status_code == 403
    assert api.post("reviewer", "/api/resume_map", mapped).status_code == 403
    assert not Answer.objects.exists()
    assert api.post("supervisor", "/api/resume_map", mapped).status_code == 202


def test_a_finished_thread_is_not_reused_by_another_graph(api: Api) -> None:
    first = api.post("supervisor", "/api/runs", {"graph": "pipeline", "input": {"n": 1},
                                                 "thread_id": "shared-thread"})
    assert first.status_code == 201 and first.json()["status"] == "completed"
    other = api.post("supervisor", "/api/runs", {"graph": "transfer", "input": {},
                                                 "thread_id": "shared-thread"})
    assert other.status_code == 409, other.content
    assert "graph 'pipeline'" in other.json()["detail"]
    assert other.json()["latest"]["thread_id"] == "shared-thread"
    assert Run.objects.filter(thread_id="shared-thread").count() == 1
    again = api.post("supervisor", "/api/runs", {"graph": "pipeline", "input": {"n": 2},
                                                 "thread_id": "shared-thread"})
    assert again.status_code == 201
