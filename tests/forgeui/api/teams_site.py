"""Two teams sharing one forge, for the tests of who sees what: finance owns the demo's
``transfer`` and the ``payout`` graph below, support owns ``ticket``; ``deploy`` is owned by
no team. Each team also owns one agent. People hold roles in one team or everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from runtime import DurableExecutor, NodeContext
from tests.forgeui.apiclient import Api

TEAMS = {"finance": {"graphs": ["transfer", "payout"], "agents": ["billing-bot"]},
         "support": {"graphs": ["ticket"], "agents": ["help-bot"]}}
GRAPHS = {"payout": "tests.forgeui.api.teams_site:payout",
          "ticket": "tests.forgeui.api.teams_site:ticket"}
# Who holds which groups: a team's role, or a plain role held everywhere.
PEOPLE = {"fin_reviewer": ["finance:reviewer"], "fin_auditor": ["finance:auditor"],
          "fin_supervisor": ["finance:supervisor"], "sup_reviewer": ["support:reviewer"],
          "sup_supervisor": ["support:supervisor"], "reviewer": ["reviewer"],
          "auditor": ["auditor"], "supervisor": ["supervisor"]}
IBAN = "DE89370400440532013000"
CARD = "4111111111111111"


def ask_payout(order: dict[str, Any], ctx: NodeContext) -> Any:
    return ctx.interrupt({"question": "Pay out?", "amount": order.get("amount"),
                          "iban": IBAN, "payee": "Acme payroll"}, sensitive=("iban",))


def ask_ticket(case: dict[str, Any], ctx: NodeContext) -> Any:
    return ctx.interrupt({"question": "Refund the customer?", "customer": "Zed Support-Case",
                          "card": CARD}, sensitive=("card",))


payout = DurableExecutor(nodes=[("ask", ask_payout)], name="payout")
ticket = DurableExecutor(nodes=[("ask", ask_ticket)], name="ticket")


@dataclass
class Site:
    """The API as each person, and one paused run of each graph."""

    api: Api
    runs: dict[str, dict[str, Any]]  # graph -> {"run_id", "thread_id", "interrupt"}

    def of(self, graph: str, key: str = "interrupt") -> str:
        return self.runs[graph][key]


@pytest.fixture(name="site")
def site_fixture(transactional_db: None, settings: Any) -> Site:
    """Import ``site_fixture`` into a test module to take ``site``."""
    settings.FORGE_TEAMS = TEAMS
    settings.FORGE_GRAPHS = {**settings.FORGE_GRAPHS, **GRAPHS}
    people = {}
    for name, groups in PEOPLE.items():
        people[name] = User.objects.create_user(name, password=name)
        for group in groups:
            people[name].groups.add(Group.objects.get_or_create(name=group)[0])
    api = Api(people)
    runs = {}
    for graph, given in (("payout", {"amount": 120}), ("ticket", {"case": 7}),
                         ("deploy", {"version": "9.9.9"})):
        started = api.start(graph, given, who="supervisor")
        (pending,) = api.pending_of(started)
        runs[graph] = {**started, "interrupt": pending["id"]}
    return Site(api, runs)
