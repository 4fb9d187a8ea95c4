"""Reading through the API: graphs, runs and their trees, checkpoints, interrupts, audit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from forgeui.models import AuditEntry
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

INTERRUPT_FIELDS = {"id", "run_id", "thread_id", "root_thread_id", "node", "task_id",
                    "namespace", "sub_agent_id", "checkpoint_id", "payload", "order",
                    "status", "created_at"}
READ_ROUTES = ["/api/graphs", "/api/runs", "/api/interrupts", "/api/audit"]


def test_health_is_public_and_everything_else_needs_authentication(api: Api) -> None:
    anonymous = Client()
    assert anonymous.get("/api/health").json() == {"status": "ok"}
    for path in [*READ_ROUTES, "/api/runs/x", "/api/checkpoints/x", "/api/threads/t/checkpoints"]:
        response = anonymous.get(path)
        assert response.status_code == 401, path
        assert response.json() == {"detail": "Unauthorized"}
    assert anonymous.post("/api/runs", {}, content_type="application/json").status_code == 401


def test_openapi_schema_and_docs_are_served_to_signed_in_users(api: Api) -> None:
    assert Client().get("/api/openapi.json").status_code == 401
    docs = Client().get("/api/docs", headers={"Accept": "text/html"})
    assert docs.status_code == 302 and docs["Location"].startswith("/accounts/login/")
    assert api.get("nobody", "/api/openapi.json").status_code == 403  # no role, no docs
    browser = Client()
    browser.force_login(api.users["auditor"])
    assert browser.get("/api/docs").status_code == 200
    schema = api.get("auditor", "/api/openapi.json").json()
    for path in ["/api/graphs", "/api/runs", "/api/runs/{run_id}",
                 "/api/threads/{thread_id}/checkpoints", "/api/checkpoints/{checkpoint_id}",
                 "/api/interrupts", "/api/interrupts/{interrupt_id}/resume", "/api/resume",
                 "/api/resume_map", "/api/threads/{thread_id}/fork", "/api/steering",
                 "/api/runs/{run_id}/cancel", "/api/audit"]:
        assert path in schema["paths"], path
    assert "1048576 bytes" in schema["info"]["description"]
    assert schema["components"]["securitySchemes"]["BearerAuth"]["scheme"] == "bearer"


def test_every_role_reads_and_a_user_without_one_is_refused_and_audited(api: Api) -> None:
    for who in ("reviewer", "supervisor", "auditor", "admin"):
        for path in READ_ROUTES:
            assert api.get(who, path).status_code == 200, (who, path)
    response = api.get("nobody", "/api/runs")
    assert response.status_code == 403
    assert "no forge role" in response.json()["detail"]
    entry = AuditEntry.objects.get(action="api.denied")
    assert entry.actor == api.users["nobody"] and entry.object_id == "/api/runs"


def test_graphs_lists_registered_names(api: Api) -> None:
    body = api.get("auditor", "/api/graphs").json()
    assert {"transfer", "supervisor", "parallel_approvals", "deploy", "nested"} <= set(
        body["items"])
    assert body["count"] == len(body["items"])


def test_runs_list_filters_and_paginates(api: Api) -> None:
    first = api.start("transfer", {"amount": 1})
    api.start("deploy", {"version": "2.0.0"})
    api.start("transfer", {"amount": 2}, who="admin")
    everything = api.get("auditor", "/api/runs").json()
    assert everything["count"] == 3
    assert {"run_id", "thread_id", "status", "graph", "started_by"} <= set(everything["items"][0])
    transfers = api.get("auditor", "/api/runs", graph="transfer").json()
    assert transfers["count"] == 2
    mine = api.get("auditor", "/api/runs", started_by="supervisor", graph="transfer").json()
    assert [r["run_id"] for r in mine["items"]] == [first["run_id"]]
    assert api.get("auditor", "/api/runs", status="completed").json()["count"] == 0
    page = api.get("auditor", "/api/runs", limit=2, offset=2).json()
    assert page["count"] == 3 and len(page["items"]) == 1
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert api.get("auditor", "/api/runs", created_after=future).json()["count"] == 0
    assert api.get("auditor", "/api/runs", created_before=future).json()["count"] == 3


def test_run_detail_has_the_tree_and_output_only_once_completed(api: Api) -> None:
    started = api.start("supervisor", {"topic": "Q3"})
    body = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert body["status"] == "interrupted" and body["output"] is None
    tree = body["tree"]
    assert tree[0]["run_id"] == started["run_id"] and tree[0]["parent_run_id"] is None
    children = {node["sub_agent_id"]: node for node in tree[1:]}
    assert set(children) == {"research_agent", "writer_agent"}
    for name, node in children.items():
        assert node["parent_run_id"] == started["run_id"]
        assert node["namespace"] == ["supervisor", name]
        assert len(node["interrupts"]) == 1 and node["interrupts"][0]["status"] == "pending"
    child = api.get("auditor", f"/api/runs/{children['writer_agent']['run_id']}").json()
    assert child["sub_agent_id"] == "writer_agent" and len(child["tree"]) == 3

    done = api.start("transfer", {"amount": 3})
    (interrupt,) = api.pending_of(done)
    assert api.post("reviewer", f"/api/interrupts/{interrupt['id']}/resume",
                    {"value": True}).status_code == 202
    body = api.get("auditor", f"/api/runs/{done['run_id']}").json()
    assert body["status"] == "completed"
    assert body["output"] == {"input": {"amount": 3}, "approved": True, "done": True}


def test_unknown_ids_are_404(api: Api) -> None:
    for path in ["/api/runs/nope", "/api/checkpoints/nope", "/api/threads/nope/checkpoints",
                 "/api/interrupts/nope", "/api/no/such/route"]:
        response = api.get("auditor", path)
        assert response.status_code == 404, path
        assert response.json()["detail"]


def test_checkpoints_oldest_first_paginated_and_one_by_id(api: Api) -> None:
    started = api.start("deploy", {"version": "3.1.0"})
    path = f"/api/threads/{started['thread_id']}/checkpoints"
    body = api.get("auditor", path).json()
    seqs = [cp["seq"] for cp in body["items"]]
    assert seqs == sorted(seqs) and body["count"] == len(seqs) >= 2
    assert body["items"][0]["parent_id"] is None
    last = body["items"][-1]
    assert last["status"] == "interrupted"
    assert last["interrupts"][0]["payload"]["kind"] == "before"
    assert api.get("auditor", path, limit=1, offset=1).json()["items"][0]["seq"] == seqs[1]
    one = api.get("auditor", f"/api/checkpoints/{last['id']}").json()
    assert one == last
    state = api.get("auditor", f"/api/checkpoints/{last['id']}/state").json()
    assert state == {"id": last["id"], "thread_id": started["thread_id"], "seq": last["seq"],
                     "state": last["state"]}
    assert api.get("auditor", "/api/checkpoints/nope/state").status_code == 404


def test_sub_agent_threads_with_slashes_list_their_checkpoints(api: Api) -> None:
    started = api.start("supervisor", {"topic": "x"})
    child = api.pending_of(started)[0]
    assert "/" in child["thread_id"]
    body = api.get("auditor", f"/api/threads/{child['thread_id']}/checkpoints").json()
    assert body["count"] >= 1 and body["items"][0]["thread_id"] == child["thread_id"]


def test_interrupts_have_the_spec_fields_and_filter(api: Api) -> None:
    transfer = api.start("transfer", {"amount": 9})
    supervisor = api.start("supervisor", {"topic": "Q4"})
    nested = api.start("nested", {"case": 1})
    items = api.pending()
    assert len(items) == 4
    assert set(items[0]) >= INTERRUPT_FIELDS
    # As times, not text: a time on a whole second is written without a fraction.
    created = [datetime.fromisoformat(i["created_at"]) for i in items]
    assert created == sorted(created)  # oldest first
    (one,) = api.pending(graph="transfer")
    assert one["root_thread_id"] == transfer["thread_id"] == one["thread_id"]
    assert one["namespace"] == ["transfer"] and one["sub_agent_id"] is None
    (writer,) = api.pending(sub_agent_id="writer_agent")
    assert writer["root_thread_id"] == supervisor["thread_id"] != writer["thread_id"]
    assert len(api.pending(namespace="supervisor")) == 2
    (deep,) = api.pending(namespace="nested/team_agent/specialist_agent")
    assert deep["root_thread_id"] == nested["thread_id"]
    assert api.pending(namespace="nested/other") == []
    everything = api.get("auditor", "/api/interrupts").json()
    assert everything["count"] == 4
    assert api.get("auditor", "/api/interrupts", status="answered").json()["count"] == 0
    assert api.get("auditor", f"/api/interrupts/{one['id']}").json()["id"] == one["id"]


def test_audit_lists_newest_first_and_filters(api: Api) -> None:
    started = api.start("transfer", {})
    (interrupt,) = api.pending_of(started)
    api.post("reviewer", f"/api/interrupts/{interrupt['id']}/resume", {"value": "yes"})
    body = api.get("auditor", "/api/audit").json()
    # the tokens' first uses are audited too, with no thread
    actions = [entry["action"] for entry in body["items"] if entry["action"] != "token.use"]
    assert actions.index("answer") < actions.index("run.start")  # newest first
    (answer,) = api.get("auditor", "/api/audit", actor="reviewer",
                        action="answer").json()["items"]
    assert answer["object_id"] == interrupt["id"] and answer["run_id"] == started["run_id"]
    assert answer["before_checkpoint_id"] == interrupt["checkpoint_id"]
    assert api.get("auditor", "/api/audit", action="run.start").json()["count"] == 1
    about = api.get("auditor", "/api/audit", object=interrupt["id"]).json()["items"]
    assert {entry["action"] for entry in about} >= {"answer"}
    assert all(entry["object_id"] == interrupt["id"] for entry in about)
    by_thread = api.get("auditor", "/api/audit", object=started["thread_id"]).json()
    assert by_thread["count"] == len(actions)
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert api.get("auditor", "/api/audit", created_after=future).json()["count"] == 0


def test_interrupts_carry_their_one_line_summary(api: Api) -> None:
    marked = api.start("custom", {"question": "Pay?", "payload": {"amount": 5, "to": "ACME"},
                                  "options": {"summary": ["to"]}})
    deploy = api.start("deploy", {"version": "3.2.0"})
    (pay,) = api.pending_of(marked)
    (paused,) = api.pending_of(deploy)
    assert pay["summary"] == "Pay? · to ACME"
    assert paused["summary"].startswith("Paused before deploy · version 3.2.0")
    one = api.get("auditor", f"/api/interrupts/{pay['id']}").json()
    assert one["summary"] == "Pay? · to ACME"
