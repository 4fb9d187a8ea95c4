"""Teams through the JSON API: another team's runs, interrupts, checkpoints and audit
entries are 404 on every object route and absent from every list body (checked by their
ids and payload text, not by status alone); sensitive fields are whole only for who may
answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from forgeui.models import AuditEntry, Interrupt, Run
from forgeui.team.sensitive import MASK
from tests.forgeui.api.teams_site import CARD, IBAN, Site, site_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

LISTS = ["/api/runs", "/api/interrupts", "/api/audit", "/api/graphs"]
TEAM_PEOPLE = ("fin_reviewer", "fin_auditor", "fin_supervisor")


def text_of(response: Any) -> str:
    """The body as text, non-ASCII unescaped (so the mask can be found in it)."""
    assert response.status_code == 200, response.content
    return json.dumps(response.json(), ensure_ascii=False)


def ids_of(site: Site, graph: str) -> list[str]:
    return [site.of(graph), site.of(graph, "run_id"), site.of(graph, "thread_id")]


def first_checkpoint(site: Site, graph: str) -> str:
    return Run.objects.get(pk=site.of(graph, "run_id")).latest_checkpoint_id


def test_a_team_member_lists_only_their_teams_work(site: Site) -> None:
    for who in TEAM_PEOPLE:
        for path in LISTS:
            body = text_of(site.api.get(who, path))
            for other in (*ids_of(site, "ticket"), *ids_of(site, "deploy"), "Zed Support"):
                assert other not in body, (who, path, other)
        runs = site.api.get(who, "/api/runs").json()
        assert {r["run_id"] for r in runs["items"]} == {site.of("payout", "run_id")}
        assert runs["count"] == 1
        inbox = site.api.get(who, "/api/interrupts", status="pending").json()
        assert [i["id"] for i in inbox["items"]] == [site.of("payout")] and inbox["count"] == 1
        assert site.api.get(who, "/api/graphs").json() == {"items": ["payout", "transfer"],
                                                           "count": 2}


def test_plain_roles_see_every_team_and_unowned_graphs(site: Site) -> None:
    for who in ("reviewer", "auditor", "supervisor", "admin"):
        listed = {i["id"] for i in site.api.get(who, "/api/interrupts").json()["items"]}
        assert listed == {site.of(g) for g in ("payout", "ticket", "deploy")}, who
        graphs = site.api.get(who, "/api/graphs").json()["items"]
        assert {"payout", "ticket", "deploy", "transfer"} <= set(graphs)


def object_reads(site: Site, graph: str) -> list[str]:
    checkpoint = first_checkpoint(site, graph)
    return [f"/api/runs/{site.of(graph, 'run_id')}", f"/api/interrupts/{site.of(graph)}",
            f"/api/threads/{site.of(graph, 'thread_id')}/checkpoints",
            f"/api/checkpoints/{checkpoint}", f"/api/checkpoints/{checkpoint}/state"]


def object_acts(site: Site, graph: str) -> list[tuple[str, dict[str, Any]]]:
    interrupt, run, thread = ids_of(site, graph)
    return [(f"/api/interrupts/{interrupt}/resume", {"value": True}),
            (f"/api/interrupts/{interrupt}/claim", {}),
            (f"/api/interrupts/{interrupt}/release", {}),
            (f"/api/interrupts/{interrupt}/assign", {"users": [], "groups": []}),
            (f"/api/interrupts/{interrupt}/cancel", {"reason": "no"}),
            ("/api/resume", {"run_id": run, "value": True}),
            ("/api/resume_map", {"thread_id": thread, "answers": {interrupt: True}}),
            ("/api/steering", {"run_id": run, "text": "look again"}),
            (f"/api/runs/{run}/cancel", {}), (f"/api/runs/{run}/recover", {}),
            (f"/api/threads/{thread}/fork", {})]


@pytest.mark.parametrize("graph", ["ticket", "deploy"])
def test_another_teams_objects_are_404_on_every_route(site: Site, graph: str) -> None:
    for who in TEAM_PEOPLE:
        for path in object_reads(site, graph):
            response = site.api.get(who, path)
            assert response.status_code == 404, (who, path, response.content)
            assert response.json()["detail"].startswith("no "), path
        for path, body in object_acts(site, graph):
            response = site.api.post(who, path, body)
            assert response.status_code == 404, (who, path, response.content)
            assert "Zed" not in response.content.decode() and response.json()["detail"]
    untouched = Interrupt.objects.get(pk=site.of(graph))
    assert untouched.status == "pending" and untouched.claimed_by_id is None
    assert Run.objects.get(pk=site.of(graph, "run_id")).status == "interrupted"
    assert Run.objects.count() == 3  # nothing forked


def test_own_teams_objects_are_read_and_acted_on_by_role(site: Site) -> None:
    for who in TEAM_PEOPLE:
        for path in object_reads(site, "payout"):
            assert site.api.get(who, path).status_code == 200, (who, path)
    interrupt = site.of("payout")
    refused = site.api.post("fin_auditor", f"/api/interrupts/{interrupt}/resume",
                            {"value": True})
    assert refused.status_code == 403 and "finance" in refused.json()["detail"]
    assert site.api.post("fin_reviewer", f"/api/runs/{site.of('payout', 'run_id')}/cancel",
                         {}).status_code == 403
    answered = site.api.post("fin_reviewer", f"/api/interrupts/{interrupt}/resume",
                             {"value": True})
    assert answered.status_code == 202, answered.content
    assert AuditEntry.objects.get(action="answer", object_id=interrupt).team == "finance"
    assert AuditEntry.objects.get(action="answer.denied", object_id=interrupt).team == "finance"


def test_a_fork_stays_in_its_sources_team(site: Site) -> None:
    forked = site.api.post("fin_reviewer", f"/api/threads/{site.of('payout', 'thread_id')}/fork",
                           {})
    assert forked.status_code == 201, forked.content
    thread = forked.json()["thread_id"]
    assert set(Run.objects.filter(thread_id=thread).values_list("team", flat=True)) == {
        "finance"}
    fork_row = AuditEntry.objects.get(action="thread.fork")
    assert fork_row.team == "finance"
    assert thread in text_of(site.api.get("fin_auditor", "/api/runs"))
    assert thread not in text_of(site.api.get("sup_reviewer", "/api/runs"))


def test_start_run_needs_the_role_in_the_graphs_team(site: Site) -> None:
    refused = site.api.post("fin_supervisor", "/api/runs", {"graph": "ticket", "input": {}})
    assert refused.status_code == 403 and "support" in refused.json()["detail"]
    assert site.api.post("fin_supervisor", "/api/runs", {"graph": "deploy"}).status_code == 403
    started = site.api.post("fin_supervisor", "/api/runs", {"graph": "payout", "input": {}})
    assert started.status_code == 201, started.content
    entry = AuditEntry.objects.get(action="run.start", run_id=started.json()["run_id"])
    assert entry.team == "finance"
    assert AuditEntry.objects.get(action="start_run.denied", object_id="ticket").team == "support"


def test_audit_entries_of_another_team_are_not_listed(site: Site) -> None:
    site.api.post("sup_reviewer", f"/api/interrupts/{site.of('ticket')}/resume", {"value": True})
    site.api.post("fin_reviewer", f"/api/interrupts/{site.of('payout')}/resume", {"value": True})
    mine = site.api.get("fin_auditor", "/api/audit").json()["items"]
    assert {e["action"] for e in mine} >= {"answer"}
    assert {e["object_id"] for e in mine if e["action"] == "answer"} == {site.of("payout")}
    everything = site.api.get("auditor", "/api/audit", action="answer").json()["items"]
    assert {e["object_id"] for e in everything} == {site.of("payout"), site.of("ticket")}


def test_a_team_reviewer_answers_their_team_and_nothing_else(site: Site) -> None:
    other = site.api.post("fin_reviewer", f"/api/interrupts/{site.of('ticket')}/resume",
                          {"value": True})
    assert other.status_code == 404 and site.of("ticket") in other.json()["detail"]
    plain = site.api.post("reviewer", f"/api/interrupts/{site.of('ticket')}/resume",
                          {"value": True})
    assert plain.status_code == 202
    unowned = site.api.post("reviewer", f"/api/interrupts/{site.of('deploy')}/resume",
                            {"value": True})
    assert unowned.status_code == 202


def test_bulk_answers_skip_other_teams_rows(site: Site) -> None:
    ids = [site.of(g) for g in ("payout", "ticket", "deploy")]
    body = site.api.post("fin_reviewer", "/api/interrupts/bulk_resume",
                         {"ids": ids, "value": True}).json()
    outcomes = {o["interrupt_id"]: o["outcome"] for o in body["items"]}
    assert outcomes == {ids[0]: "accepted", ids[1]: "not_found", ids[2]: "not_found"}
    assert "Zed" not in json.dumps(body)
    assert Interrupt.objects.filter(pk__in=ids[1:], status="pending").count() == 2


def test_bulk_by_filter_touches_only_rows_the_caller_may_answer(site: Site) -> None:
    body = site.api.post("sup_reviewer", "/api/interrupts/bulk_resume",
                         {"filter": {}, "value": True}).json()
    assert [o["interrupt_id"] for o in body["items"]] == [site.of("ticket")]
    assert body["accepted"] == 1
    assert Interrupt.objects.filter(status="pending").count() == 2


def test_sensitive_fields_are_masked_for_who_may_not_answer(site: Site) -> None:
    interrupt, run = site.of("payout"), site.of("payout", "run_id")
    for who in ("auditor", "fin_auditor"):
        for path in ("/api/interrupts", f"/api/interrupts/{interrupt}", f"/api/runs/{run}"):
            body = text_of(site.api.get(who, path))
            assert IBAN not in body and MASK in body and "Acme payroll" in body, (who, path)
    for who in ("reviewer", "fin_reviewer", "fin_supervisor"):
        shown = site.api.get(who, f"/api/interrupts/{interrupt}").json()
        assert shown["payload"]["iban"] == IBAN, who
        tree = site.api.get(who, f"/api/runs/{run}").json()["tree"]
        assert tree[0]["interrupts"][0]["payload"]["iban"] == IBAN
    support_card = site.api.get("fin_reviewer", "/api/interrupts", q=CARD).json()
    assert support_card["count"] == 0
    assert site.api.get("auditor", "/api/interrupts", q=IBAN).json()["count"] == 0
    assert site.api.get("auditor", "/api/interrupts", q="payroll").json()["count"] == 0
    assert site.api.get("fin_reviewer", "/api/interrupts", q=IBAN).json()["count"] == 1
    assert site.api.get("auditor", "/api/interrupts", q="Deploy").json()["count"] == 1


def test_an_agents_sensitive_args_are_masked_in_its_runs_input(site: Site) -> None:
    made = site.api.post("fin_reviewer", "/api/requests", {"actions": [
        {"name": "pay", "args": {"to": {"iban": IBAN}, "amount": 5}, "sensitive": ["iban"]}]})
    assert made.status_code == 201, made.content
    run = f"/api/runs/{made.json()['id']}"
    assert IBAN not in text_of(site.api.get("auditor", run))
    assert IBAN in text_of(site.api.get("reviewer", run))


def test_sensitive_fields_are_masked_in_checkpoints(site: Site) -> None:
    thread = site.of("payout", "thread_id")
    checkpoint = first_checkpoint(site, "payout")
    paths = [f"/api/threads/{thread}/checkpoints", f"/api/checkpoints/{checkpoint}"]
    for path in paths:
        masked = text_of(site.api.get("fin_auditor", path))
        assert IBAN not in masked and MASK in masked and "Acme payroll" in masked, path
        assert IBAN in text_of(site.api.get("fin_reviewer", path)), path


def test_sensitive_keys_in_an_answers_audit_row_are_masked(site: Site) -> None:
    answer = {"ok": True, "iban": IBAN}
    assert site.api.post("fin_reviewer", f"/api/interrupts/{site.of('payout')}/resume",
                         {"value": answer}).status_code == 202
    for who in ("auditor", "fin_auditor"):
        body = text_of(site.api.get(who, "/api/audit", action="answer"))
        assert IBAN not in body and MASK in body, who
    shown = site.api.get("fin_reviewer", "/api/audit", action="answer").json()["items"]
    (entry,) = [e for e in shown if e["action"] == "answer"]
    assert entry["detail"]["value"]["iban"] == IBAN
    assert AuditEntry.objects.get(action="answer").detail["value"]["iban"] == IBAN
