"""Approval requests from agents outside forge: who asked, and how to find it again.

A request is a run of the built-in ``forge.request`` graph that pauses once, so the inbox,
claims, deadlines, decisions and audit treat it as any interrupt. This row keeps what the
run does not: the asking agent, its idempotency key and its callback. The request's id is
also its thread id and its run id.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from forgeui.permissions.roles import team_q

from .runs import ID_LENGTH

# The built-in graph each request runs (``forgeui.requests.graph``; a test keeps them equal).
REQUEST_GRAPH = "forge.request"


class AgentRequestQuerySet(models.QuerySet["AgentRequest"]):
    def visible_to(self, user: object, agent: str) -> AgentRequestQuerySet:
        """An agent sees the requests it made only (not its user's, nor those of the user's
        other agents); people see those of the teams in which they hold a role."""
        if agent:
            return self.filter(owner=user, token_agent=agent[:200])
        return self.filter(team_q(user))


class AgentRequest(models.Model):
    id = models.CharField(primary_key=True, max_length=ID_LENGTH)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="+", help_text="the token's user that asked")
    agent = models.CharField(max_length=200, blank=True, default="",
                             help_text="the asking agent's name")
    token_agent = models.CharField(max_length=200, blank=True, default="",
                                   help_text="the agent its token names (it cannot choose)")
    team = models.CharField(max_length=64, blank=True, default="", db_default="",
                            db_index=True, help_text="the owning team (FORGE_TEAMS); empty: none")
    session = models.CharField(max_length=300, blank=True, default="",
                               help_text="the agent's session or run reference")
    idempotency_key = models.CharField(max_length=200, blank=True, default="")
    callback = models.ForeignKey("forgeui.Webhook", null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    objects = AgentRequestQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(
            fields=["owner", "idempotency_key"], name="forgeui_request_idempotent",
            condition=~models.Q(idempotency_key=""))]

    def __str__(self) -> str:
        return f"request {self.id} from {self.agent or self.owner_id}"
