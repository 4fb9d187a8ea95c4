"""The Slack tasks, on the notification pool: Slack never holds up a run."""

from __future__ import annotations

import logging
from typing import Any

from django_tasks import task

from forgeui.slack import acting, config, delivery

logger = logging.getLogger(__name__)


def on_events(event_ids: list[int]) -> None:
    """Event listener: hand the ids to the Slack task; never waits on Slack, never raises."""
    if not config.posting():
        return
    try:
        sync_events_task.enqueue(event_ids)
    except Exception:
        logger.exception("could not enqueue the Slack sync of events %s", event_ids)


@task(backend="notify")
def sync_events_task(event_ids: list[int]) -> dict[str, Any]:
    """Post or update the messages of these events' interrupts."""
    return {"synced": delivery.sync_events(event_ids)}


@task(backend="notify")
def resync_task() -> dict[str, Any]:
    """The periodic retry of messages left behind by a Slack outage."""
    return {"synced": delivery.resync()}


@task(backend="notify")
def press_task(payload: dict[str, Any]) -> dict[str, Any]:
    """A button pressed in Slack, acknowledged already: decide (or open a form)."""
    return {"outcome": acting.pressed(payload)}


@task(backend="notify")
def submit_task(payload: dict[str, Any]) -> dict[str, Any]:
    """A Slack form submitted, acknowledged already: decide with what it holds."""
    return {"outcome": acting.submitted(payload)}
