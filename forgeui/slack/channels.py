"""Which Slack channel an interrupt's message goes to.

``FORGE_SLACK_CHANNELS`` names channels by what asks, most particular first: the policy
covering the interrupt (``"policy:payments"``), the agent whose token asked
(``"agent:billing-bot"``; never a name the agent chose), the graph's node
(``"graph:transfer/approve"``), the graph (``"graph:transfer"``); else
``FORGE_SLACK_CHANNEL``. An interrupt that no entry and no default covers is not posted.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from forgeui.models import AgentRequest, Interrupt
from forgeui.runs.policies import approvals
from forgeui.runs.registry import REQUEST_GRAPH
from forgeui.slack import config

KINDS = ("policy", "agent", "graph")


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


def keys_of(interrupt: Interrupt) -> list[str]:
    graph = interrupt.run.graph
    policy = approvals.policy_for(interrupt)
    keys = [f"policy:{policy.name}"] if policy is not None else []
    if graph == REQUEST_GRAPH:
        agent = (AgentRequest.objects.filter(pk=interrupt.root_thread_id)
                 .values_list("token_agent", flat=True).first())
        keys += [f"agent:{agent}"] if agent else []
    return [*keys, f"graph:{graph}/{interrupt.node}", f"graph:{graph}"]


def problem(found: Any) -> str | None:
    """What makes ``found`` not ``{"graph:NAME" | "agent:NAME" | "policy:NAME": channel}``."""
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
    """E040: a ``FORGE_SLACK_CHANNELS`` that cannot be used, with why."""
    found = problem(getattr(settings, "FORGE_SLACK_CHANNELS", None) or {})
    return [] if found is None else [checks.Error(found, id="forgeui.E040")]
