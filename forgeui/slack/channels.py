"""Which Slack channel an interrupt's message goes to.

``FORGE_SLACK_CHANNELS`` names channels by what asks, most particular first: the policy
covering the interrupt (``"policy:payments"``), the agent whose token asked
(``"agent:billing-bot"``; never a name the agent chose), the team owning the interrupt
(``"team:finance"``, ``FORGE_TEAMS``), the graph's node (``"graph:transfer/approve"``),
the graph (``"graph:transfer"``); else ``FORGE_SLACK_CHANNEL``. An interrupt that no
entry and no default covers is not posted. Where the channel found is ``"@assignees"``,
the message goes to the direct messages of each assignee linked to Slack (named, or in
an assigned group) who may read the interrupt in its team, instead; with none linked, to
``FORGE_SLACK_CHANNEL``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import checks
from django.db.models import Q

from forgeui.models import AgentRequest, Interrupt
from forgeui.models.assignees import decode
from forgeui.notifications.audience import told_of
from forgeui.permissions import teams
from forgeui.runs.policies import approvals
from forgeui.runs.registry import REQUEST_GRAPH
from forgeui.slack import config
from forgeui.slack.models import SlackLink

KINDS = ("policy", "agent", "team", "graph")
ASSIGNEES = "@assignees"  # each linked assignee's direct messages


def channels() -> dict[str, str]:
    found = getattr(settings, "FORGE_SLACK_CHANNELS", None) or {}
    return dict(found) if problem(found) is None else {}


def channel_for(interrupt: Interrupt) -> str:
    """The channel for ``interrupt``'s message; "" when none is configured for it."""
    named = channels()
    for key in keys_of(interrupt) if named else ():
        if key in named:
            return named[key]
    return config.channel()


def routes_for(interrupt: Interrupt) -> list[str]:
    """Where ``interrupt``'s messages go: one channel, or its linked assignees' DMs."""
    where = channel_for(interrupt)
    if where != ASSIGNEES:
        return [where] if where else []
    fallback = config.channel() if config.channel() != ASSIGNEES else ""
    return assignee_dms(interrupt) or ([fallback] if fallback else [])


def assignee_dms(interrupt: Interrupt) -> list[str]:
    """The Slack user ids of the interrupt's assignees who linked their accounts."""
    users, groups = decode(interrupt.assignees)
    if not users and not groups:
        return []
    found = SlackLink.objects.filter(Q(user__username__in=users) | Q(user__groups__name__in=groups),
                                     user__is_active=True)
    readers = get_user_model().objects.filter(told_of(interrupt.team)).values("pk")
    return sorted(set(found.filter(user__in=readers).values_list("slack_user_id", flat=True)))


def keys_of(interrupt: Interrupt) -> list[str]:
    graph = interrupt.run.graph
    policy = approvals.policy_for(interrupt)
    keys = [f"policy:{policy.name}"] if policy is not None else []
    if graph == REQUEST_GRAPH:
        agent = (AgentRequest.objects.filter(pk=interrupt.root_thread_id)
                 .values_list("token_agent", flat=True).first())
        keys += [f"agent:{agent}"] if agent else []
    keys += [f"team:{interrupt.team}"] if interrupt.team else []
    return [*keys, f"graph:{graph}/{interrupt.node}", f"graph:{graph}"]


def problem(found: Any) -> str | None:
    """What makes ``found`` not ``{"graph:NAME" | "team:NAME" | "agent:NAME" | "policy:NAME":
    channel}``."""
    if not isinstance(found, dict):
        return f"FORGE_SLACK_CHANNELS must be a JSON object, not {found!r:.80}"
    for key, channel in found.items():
        if not isinstance(channel, str) or not channel:
            return f"FORGE_SLACK_CHANNELS[{key!r}] must name a channel"
        kind, _, name = str(key).partition(":")
        if kind not in KINDS or not name:
            return (f"FORGE_SLACK_CHANNELS key {key!r} must be one of "
                    f"{', '.join(k + ':NAME' for k in KINDS)}")
    return None


def check_channels(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E040: a ``FORGE_SLACK_CHANNELS`` that cannot be used, with why; W040: a
    ``"team:NAME"`` key naming no team of ``FORGE_TEAMS`` (it would never match)."""
    named = getattr(settings, "FORGE_SLACK_CHANNELS", None) or {}
    found = problem(named)
    if found is not None:
        return [checks.Error(found, id="forgeui.E040")]
    return [checks.Warning(f"FORGE_SLACK_CHANNELS key {key!r} names no team of FORGE_TEAMS",
                           id="forgeui.W040") for key in unknown_teams(named)]


def unknown_teams(named: dict[str, str]) -> list[str]:
    """The ``"team:NAME"`` keys of ``named`` whose team is not configured."""
    known = teams.configured()
    return [key for key in named if key.startswith("team:") and key[5:] not in known]
