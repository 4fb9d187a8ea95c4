"""``manage.py assign_teams``: stamp rows with the teams ``FORGE_TEAMS`` says now.

Rows are stamped when they are made; after the setting changes, this moves the runs,
interrupts and requests already there to their graph's or agent's team. Audit entries
stay with the team they were written for: the history does not move.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from forgeui.apps import OPERATIONS_CHECKS
from forgeui.models import AgentRequest, AuditEntry, Interrupt, Run
from forgeui.permissions import teams
from forgeui.requests.graph import GRAPH as REQUEST_GRAPH


class Command(BaseCommand):
    help = "Stamp runs, interrupts and requests with the teams FORGE_TEAMS names now."
    requires_system_checks = OPERATIONS_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count, change nothing")

    def handle(self, *args: Any, dry_run: bool, **options: Any) -> None:
        with transaction.atomic():
            moved = self._graphs() + self._agents()
            if dry_run:
                transaction.set_rollback(True)
            elif moved:
                AuditEntry.objects.create(action="teams.assign",
                                          detail={"rows": moved})
        self.stdout.write(f"{moved} rows {'would move' if dry_run else 'moved'}")

    def _graphs(self) -> int:
        moved = 0
        graphs = Run.objects.exclude(graph=REQUEST_GRAPH).values_list("graph", flat=True)
        for graph in sorted(set(graphs)):
            team = teams.team_of_graph(graph)
            moved += Run.objects.filter(graph=graph).exclude(team=team).update(team=team)
            moved += (Interrupt.objects.filter(run__graph=graph).exclude(team=team)
                      .update(team=team))
        return moved

    def _agents(self) -> int:
        moved = 0
        agents = AgentRequest.objects.values_list("token_agent", flat=True)
        for agent in sorted(set(agents)):
            team = teams.team_of_agent(agent)
            asked = AgentRequest.objects.filter(token_agent=agent)
            moved += asked.exclude(team=team).update(team=team)
            ids = asked.values("id")
            moved += Run.objects.filter(run_id__in=ids).exclude(team=team).update(team=team)
            moved += (Interrupt.objects.filter(run_id__in=ids).exclude(team=team)
                      .update(team=team))
        return moved
