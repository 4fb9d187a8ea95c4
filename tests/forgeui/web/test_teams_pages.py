"""Teams on the dashboard's pages: another team's work is never listed, counted, exported
or opened (404), buttons follow the object's team, sensitive keys are masked.

Finance owns ``transfer`` and ``vault`` (a graph of this module whose interrupt marks its
``iban`` sensitive), support owns ``deploy``; ``parallel_approvals`` is no team's.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from forgeui.models import AuditEntry, Interrupt, Run
from forgeui.runs import services
from forgeui.team import decision_links
from forgeui.team.sensitive import MASK
from runtime import DurableExecutor, NodeContext
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)

IBAN = "DE00SECRETIBAN4711"
TEAMS = {"finance": {"graphs": ["transfer", "vault"]}, "support": {"graphs": ["deploy"]}}
GRAPHS = {**settings.FORGE_GRAPHS, "vault": "tests.forgeui.web.test_teams_pages:vault"}


def ask_to_pay(order: dict[str, Any], ctx: NodeContext) -> Any:
    paid = ctx.interrupt({"question": "Pay this IBAN?", "iban": order["iban"]},
                         sensitive=("iban",))
    return {"iban": order["iban"], "paid": paid}


vault = DurableExecutor(nodes=[("pay", ask_to_pay)], name="vault")


@dataclass(frozen=True)
class Work:
    """One team's pending interrupt, its run and thread, and a decision it made."""

    pending: Interrupt
    answered: Interrupt

    @property
    def ids(self) -> list[str]:
        """What must never show to another team: ids of interrupts, runs, threads."""
        return [self.pending.pk, self.pending.run_id, self.pending.root_thread_id,
                self.answered.pk, self.answered.run_id]


@dataclass(frozen=True)
class World:
    finance: Work
    support: Work
    unowned: Interrupt
    people: dict[str, User]

    def client(self, name: str) -> Client:
        return logged_in(self.people[name])


def person(name: str, *groups: str) -> User:
    user = User.objects.create_user(name, password=name)
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def pending_of(thread_id: str) -> Interrupt:
    found = Interrupt.objects.of_tree(thread_id).pending().order_by("created_at").first()
    assert found is not None, f"nothing pending in {thread_id}"
    return found


def work(users: dict[str, User], graph: str, given: dict[str, Any], answered_by: str,
         answer: Any = True) -> Work:
    """A pending interrupt of ``graph`` and another one answered by ``answered_by``."""
    pending = pending_of(services.start_run(users["supervisor"], graph, given).thread_id)
    done = pending_of(services.start_run(users["supervisor"], graph, given).thread_id)
    services.answer_interrupt(users[answered_by], done.pk, answer, steering=f"{graph} checked")
    return Work(pending, Interrupt.objects.get(pk=done.pk))


@pytest.fixture
def world(users: dict[str, User]) -> Iterator[World]:
    with override_settings(FORGE_TEAMS=TEAMS, FORGE_GRAPHS=GRAPHS):
        # The answer repeats the IBAN: masked wherever the question's is.
        finance = work(users, "vault", {"iban": IBAN}, "reviewer", {"iban": IBAN, "ok": True})
        support = work(users, "deploy", {"memo": "support-only"}, "supervisor")
        unowned = pending_of(
            services.start_run(users["supervisor"], "parallel_approvals", {}).thread_id)
        people = {**users,
                  "fin_reviewer": person("fin_reviewer", "finance:reviewer"),
                  "fin_auditor": person("fin_auditor", "finance:auditor"),
                  "fin_supervisor": person("fin_supervisor", "finance:supervisor"),
                  "sup_reviewer": person("sup_reviewer", "support:reviewer"),
                  # answers in finance, only reads support
                  "mixed": person("mixed", "finance:reviewer", "support:auditor")}
        yield World(finance, support, unowned, people)


def text(response: Any) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def absent(body: str, ids: list[str]) -> None:
    shown = [found for found in ids if found in body]
    assert not shown, f"another team's ids shown: {shown}"


def test_the_teams_are_stamped_as_the_tests_expect(world: World) -> None:
    assert world.finance.pending.team == "finance" and world.support.pending.team == "support"
    assert world.unowned.team == "" and world.finance.pending.sensitive == ["iban"]


def test_the_inbox_lists_and_counts_only_the_members_teams(world: World) -> None:
    fin, sup = world.finance.pending, world.support.pending
    body = text(world.client("fin_reviewer").get("/"))
    assert fin.pk in body
    absent(body, [*world.support.ids, world.unowned.pk])
    assert '<strong id="pending-count">1</strong>' in body
    for tab in ("queue", "assigned", "done"):
        absent(text(world.client("fin_reviewer").get("/", {"tab": tab})), world.support.ids)
    found = text(world.client("fin_reviewer").get("/", {"q": "support-only"}))
    assert '<strong id="pending-count">0</strong>' in found and sup.pk not in found
    theirs = text(world.client("sup_reviewer").get("/"))
    assert sup.pk in theirs and '<strong id="pending-count">1</strong>' in theirs
    absent(theirs, world.finance.ids)
    everyone = text(world.client("reviewer").get("/"))
    assert all(i.pk in everyone for i in (fin, sup, world.unowned))  # two unowned
    assert '<strong id="pending-count">4</strong>' in everyone


def object_pages(work: Work) -> list[str]:
    thread = work.pending.root_thread_id
    return [f"/interrupts/{work.pending.pk}/", f"/interrupts/{work.answered.pk}/",
            f"/runs/{work.pending.run_id}/", f"/threads/{thread}/",
            f"/threads/{thread}/tree/", f"/threads/{thread}/export.json",
            f"/checkpoints/{work.pending.checkpoint_id}/"]


@pytest.mark.parametrize("name", ["fin_reviewer", "fin_auditor", "fin_supervisor"])
def test_another_teams_objects_are_not_found(world: World, name: str) -> None:
    client = world.client(name)
    for url in object_pages(world.support):
        response = client.get(url)
        assert response.status_code == 404, url
        absent(text(response), world.support.ids)
    assert client.get("/graphs/deploy/").status_code == 404
    for url in object_pages(world.finance):
        assert client.get(url, follow=True).status_code == 200, url
    assert client.get(f"/interrupts/{world.unowned.pk}/").status_code == 404


def test_acting_on_another_teams_objects_is_not_found(world: World) -> None:
    client, sup = world.client("fin_supervisor"), world.support.pending
    posts = {f"/interrupts/{sup.pk}/answer/": {"action": "approve"},
             f"/interrupts/{sup.pk}/claim/": {"op": "claim"},
             f"/interrupts/{sup.pk}/note/": {"text": "hello"},
             f"/interrupts/{sup.pk}/assign/": {"users": ["fin_reviewer"]},
             f"/interrupts/{sup.pk}/cancel/": {"reason": "no"},
             f"/runs/{sup.run_id}/cancel/": {}, f"/runs/{sup.run_id}/steer/": {"text": "x"},
             f"/runs/{sup.run_id}/fork/": {"interrupt_id": sup.pk, "value": "{}"},
             f"/threads/{sup.root_thread_id}/fork/": {},
             f"/interrupts/{sup.pk}/decide/": {}}
    for url, data in posts.items():
        assert client.post(url, data).status_code == 404, url
    still = Interrupt.objects.get(pk=sup.pk)
    assert still.status == "pending" and still.claimed_by_id is None


def test_bulk_answers_leave_other_teams_rows_alone(world: World) -> None:
    fin, sup = world.finance.pending, world.support.pending
    response = world.client("fin_supervisor").post(
        "/interrupts/bulk/", {"action": "approve", "ids": [fin.pk, sup.pk]})
    assert response.status_code == 200
    absent(text(response), [sup.pk])
    assert Interrupt.objects.get(pk=sup.pk).status == "pending"
    assert Interrupt.objects.get(pk=fin.pk).status == "answered"
    world.client("fin_supervisor").post("/interrupts/bulk/", {"action": "approve", "all": "1",
                                                              "query": ""})
    assert Interrupt.objects.get(pk=sup.pk).status == "pending"
    assert Interrupt.objects.get(pk=world.unowned.pk).status == "pending"


def test_runs_and_graphs_show_only_the_members_teams(world: World) -> None:
    body = text(world.client("fin_supervisor").get("/runs/"))
    assert world.finance.pending.run_id in body and world.finance.answered.run_id in body
    absent(body, [*world.support.ids, world.unowned.run_id])
    assert 'value="vault"' in body and 'value="deploy"' not in body
    assert 'value="parallel_approvals"' not in body
    form = text(world.client("fin_supervisor").get("/runs/start/form/", {"graph": "deploy"}))
    assert 'value="deploy"' not in form and 'value="transfer"' in form
    everyone = text(world.client("supervisor").get("/runs/"))
    assert all(run in everyone for run in (world.support.pending.run_id, world.unowned.run_id))
    missing = world.client("fin_auditor").get("/graphs/deploy/")
    assert missing.status_code == 404 and 'href="/graphs/deploy/"' not in text(missing)
    assert 'href="/graphs/transfer/"' in text(missing)


def test_start_run_only_where_the_user_may_start_in_the_graphs_team(world: World) -> None:
    auditor = text(world.client("fin_auditor").get("/graphs/transfer/"))
    supervisor = text(world.client("fin_supervisor").get("/graphs/transfer/"))
    assert 'action="/runs/start/"' not in auditor
    assert 'action="/runs/start/"' in supervisor
    assert world.client("sup_reviewer").get("/graphs/transfer/").status_code == 404


def test_buttons_follow_the_objects_team(world: World) -> None:
    client = world.client("mixed")
    fin, sup = world.finance.pending, world.support.pending
    theirs = text(client.get(f"/interrupts/{sup.pk}/"))
    ours = text(client.get(f"/interrupts/{fin.pk}/"))
    assert f'action="/interrupts/{fin.pk}/answer/"' in ours
    assert f'/interrupts/{sup.pk}/answer/' not in theirs
    assert f'/interrupts/{sup.pk}/note/' not in theirs
    row = text(client.get("/"))
    assert sup.pk in row and f'/interrupts/{sup.pk}/answer/' not in row
    queue = text(client.get("/", {"tab": "queue"}))
    assert fin.pk in queue and sup.pk not in queue
    run_page = text(client.get(f"/runs/{sup.run_id}/"))
    assert f"/runs/{sup.run_id}/cancel/" not in run_page
    assert f"/threads/{sup.root_thread_id}/fork/" not in run_page
    assert f"/runs/{sup.run_id}/steer/" not in run_page
    assert f"/threads/{sup.root_thread_id}/fork/" not in text(
        client.get(f"/threads/{sup.root_thread_id}/"))
    assert f"/threads/{fin.root_thread_id}/fork/" in text(
        client.get(f"/threads/{fin.root_thread_id}/"))


def test_sensitive_keys_whole_to_answerers_masked_to_readers(world: World) -> None:
    fin = world.finance.pending
    for name in ("fin_reviewer", "reviewer", "fin_supervisor"):
        assert IBAN in text(world.client(name).get(f"/interrupts/{fin.pk}/")), name
    done = world.finance.answered
    assert Run.objects.get(pk=done.run_id).output["iban"] == IBAN
    for url in (f"/runs/{done.run_id}/", f"/interrupts/{done.pk}/", "/audit/decisions/"):
        assert IBAN in text(world.client("fin_reviewer").get(url)), url
    readers = ("fin_auditor", "auditor")
    pages = [f"/interrupts/{fin.pk}/", f"/runs/{fin.run_id}/", "/",
             f"/threads/{fin.root_thread_id}/", f"/threads/{fin.root_thread_id}/tree/",
             "/audit/", "/audit/decisions/", f"/runs/{done.run_id}/",
             f"/interrupts/{done.pk}/", f"/threads/{done.root_thread_id}/"]
    for name in readers:
        for url in pages:
            body = text(world.client(name).get(url))
            assert IBAN not in body, (name, url)
        assert MASK in text(world.client(name).get(f"/interrupts/{fin.pk}/"))
    assert Interrupt.objects.get(pk=fin.pk).payload["iban"] == IBAN  # kept whole


def test_exports_mask_sensitive_keys_and_leave_other_teams_out(world: World) -> None:
    for name in ("fin_auditor", "fin_reviewer", "supervisor"):
        client = world.client(name)
        for url in ("/audit/decisions/export.csv", "/audit/decisions/export.json",
                    "/audit/export.csv", "/audit/export.json",
                    f"/threads/{world.finance.answered.root_thread_id}/export.json"):
            assert IBAN not in text(client.get(url)), (name, url)
    client = world.client("fin_auditor")
    rows = list(csv.DictReader(io.StringIO(text(client.get("/audit/decisions/export.csv")))))
    assert [row["interrupt_id"] for row in rows] == [world.finance.answered.pk]
    assert MASK in rows[0]["summary"]
    body = json.loads(text(client.get("/audit/decisions/export.json")))
    assert body["count"] == 1
    for url in ("/audit/export.csv", "/audit/export.json", "/audit/decisions/"):
        absent(text(client.get(url)), world.support.ids)
    everything = text(world.client("auditor").get("/audit/decisions/export.json"))
    assert json.loads(everything)["count"] == 2


def test_a_team_auditor_sees_their_entries_and_the_whole_chains_status(world: World) -> None:
    call_command("verify_audit", verbosity=0)
    body = text(world.client("fin_auditor").get("/audit/"))
    assert world.finance.answered.pk in body
    absent(body, world.support.ids)
    assert 'id="chain-status"' in body and "Chain verified" in body
    assert "entries of other teams are not" in body
    everyone = text(world.client("auditor").get("/audit/"))
    assert world.support.answered.pk in everyone and world.finance.answered.pk in everyone
    assert "Chain verified" in everyone and "entries of other teams" not in everyone


def test_the_decisions_page_lists_only_the_members_teams(world: World) -> None:
    body = text(world.client("fin_auditor").get("/audit/decisions/"))
    assert "<strong>1</strong> decision ·" in body and world.finance.answered.pk in body
    absent(body, world.support.ids)
    assert "vault checked" in body and "deploy checked" not in body
    both = text(world.client("auditor").get("/audit/decisions/"))
    assert "<strong>2</strong> decisions" in both


def test_without_teams_plain_roles_see_and_do_as_before(
        users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "deploy", {})
    interrupt = pending_of(started.thread_id)
    assert interrupt.team == "" and Run.objects.get(pk=started.run_id).team == ""
    body = text(logged_in(users["auditor"]).get("/audit/"))
    assert interrupt.run_id in body and "entries of other teams" not in body
    page = logged_in(users["reviewer"]).get(f"/interrupts/{interrupt.pk}/")
    assert page.status_code == 200
    assert f'action="/interrupts/{interrupt.pk}/answer/"' in text(page)
    assert "/runs/start/" in text(logged_in(users["supervisor"]).get("/graphs/deploy/"))


def test_a_refused_decision_link_is_audited_in_the_interrupts_team(world: World) -> None:
    fin = world.finance.pending
    token = decision_links.token_for(world.people["fin_reviewer"], fin.pk)
    response = world.client("sup_reviewer").get(f"/links/{token}/")
    assert response.status_code == 403
    refused = AuditEntry.objects.get(action="decision_link.refused")
    assert refused.team == "finance"
    assert fin.pk not in text(world.client("sup_reviewer").get("/audit/"))
    assert fin.pk in text(world.client("fin_auditor").get("/audit/"))


def test_the_assignment_picker_offers_only_people_and_groups_of_the_team(
        world: World) -> None:
    Group.objects.get_or_create(name="oncall")
    body = text(world.client("fin_supervisor").get(f"/interrupts/{world.finance.pending.pk}/"))
    picker = body[body.index('id="assignment"'):]
    for offered in ("fin_reviewer", "fin_supervisor", "mixed", "reviewer",
                    "finance:reviewer", "oncall"):
        assert f'value="{offered}"' in picker, offered
    for hidden in ("sup_reviewer", "fin_auditor", "support:reviewer", "finance:auditor"):
        assert f'value="{hidden}"' not in picker, hidden


def inbox_statements(client: Client) -> int:
    with CaptureQueriesContext(connection) as seen:
        assert client.get("/").status_code == 200
    return len(seen.captured_queries)


def test_the_team_filter_costs_no_statement_per_row(world: World) -> None:
    client = world.client("mixed")  # answers finance rows, only reads support's
    before = inbox_statements(client)
    for graph in ("vault", "deploy", "vault"):
        services.start_run(world.people["supervisor"], graph, {"iban": IBAN})
    assert '<strong id="pending-count">5</strong>' in text(client.get("/"))
    assert inbox_statements(client) == before


def test_a_bulk_report_sums_up_rows_as_the_user_may_see_them(world: World) -> None:
    reader = person("reader", "support:reviewer", "finance:auditor")
    fin = world.finance.pending
    response = logged_in(reader).post("/interrupts/bulk/", {"action": "approve",
                                                            "ids": [fin.pk]})
    assert response.status_code == 200 and "Pay this IBAN?" in text(response)
    assert IBAN not in text(response)


def test_a_forks_edited_input_is_masked_for_readers(world: World) -> None:
    fin = world.finance.pending
    other = IBAN.replace("4711", "0815")
    forked = services.fork_thread(world.people["supervisor"], fin.root_thread_id,
                                  inputs={fin.pk: {"iban": other}})
    timeline = f"/threads/{forked}/"
    assert other in text(world.client("fin_reviewer").get(timeline))
    body = text(world.client("fin_auditor").get(timeline))
    assert "Edited when forked" in body and other not in body and MASK in body
