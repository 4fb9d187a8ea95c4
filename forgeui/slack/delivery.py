"""Posting and updating interrupts' messages, fed by the inbox's event rows.

``tasks.on_events`` (an event listener, registered when the app is ready) only enqueues;
the task marks each message wanted again and ``sync`` renders the interrupt as it stands
now, so messages converge on the database whatever order or number of events arrive.
A failing Web API call is retried with backoff; a message still behind after that is
picked up by ``resync``, which the scheduler's tick runs. Slack being down therefore
costs a message its freshness, never an answer its progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db.models import F, Q
from django.utils import timezone

from forgeui.models import Event, EventKind, Interrupt, InterruptStatus
from forgeui.slack import blocks, channels, config
from forgeui.slack.models import SlackMessage

logger = logging.getLogger(__name__)

LEASE = timedelta(minutes=2)
INTERRUPT_KINDS = (EventKind.INTERRUPT_CREATED, EventKind.INTERRUPT_ANSWERED,
                   EventKind.INTERRUPT_CANCELLED, EventKind.INTERRUPT_UPDATED)


def sync_events(event_ids: list[int]) -> list[str]:
    """Mark the messages of these events' interrupts wanted again (a new interrupt gets
    one), then sync them; the interrupt ids synced."""
    rows = Event.objects.filter(pk__in=event_ids, kind__in=INTERRUPT_KINDS).exclude(
        interrupt_id="").values_list("kind", "interrupt_id")
    created = {i for kind, i in rows if kind == EventKind.INTERRUPT_CREATED}
    touched = list(dict.fromkeys(i for _, i in rows))
    SlackMessage.objects.filter(interrupt_id__in=set(touched) - created).update(
        wanted=F("wanted") + 1)
    # A new interrupt gets its messages; a pending one reassigned, its new assignees' DMs.
    for interrupt in Interrupt.objects.select_related("run").filter(pk__in=touched):
        if interrupt.pk in created or interrupt.status == InterruptStatus.PENDING:
            for route in channels.routes_for(interrupt):
                SlackMessage.objects.get_or_create(interrupt=interrupt, route=route,
                                                   defaults={"channel": route})
    for interrupt_id in touched:
        sync(interrupt_id)
    return touched


def resync() -> list[str]:
    """Sync every message still behind its interrupt and not being synced now; the ids
    of their interrupts."""
    if not config.posting():
        return []
    now = timezone.now()
    behind_now = SlackMessage.objects.filter(synced__lt=F("wanted")).filter(
        Q(leased_until__isnull=True) | Q(leased_until__lt=now))
    found = list(behind_now.values_list("pk", "interrupt_id")[:500])
    for pk, _ in found:
        sync_message(pk)
    return list(dict.fromkeys(interrupt_id for _, interrupt_id in found))


def sync(interrupt_id: str, sleep: Callable[[float], None] = time.sleep) -> str:
    """Bring the interrupt's messages up to date; the least settled outcome of theirs
    (``sync_message``), ``current`` when there is nothing to do."""
    outcomes = {sync_message(pk, sleep) for pk in SlackMessage.objects.filter(
        interrupt_id=interrupt_id).order_by("pk").values_list("pk", flat=True)}
    return next((word for word in ("behind", "synced", "busy") if word in outcomes),
                "current")


def sync_message(pk: int, sleep: Callable[[float], None] = time.sleep) -> str:
    """Bring one message up to date: ``synced``, ``behind`` (calls failed), ``busy``
    (another sync holds it and will see what changed) or ``current`` (nothing to do)."""
    outcome = ""
    while (message := lease(pk)) is not None:
        try:
            outcome = "synced" if send(message, sleep) else "behind"
        finally:
            SlackMessage.objects.filter(pk=message.pk).update(leased_until=None)
        # Asked again after the lease ended: an event whose sync found it leased counts
        # on this check.
        if outcome == "behind" or not behind(pk):
            return outcome
    return outcome or ("busy" if behind(pk) else "current")


def behind(pk: int) -> bool:
    return SlackMessage.objects.filter(pk=pk, synced__lt=F("wanted")).exists()


def lease(pk: int) -> SlackMessage | None:
    """The message, leased to this sync while it is behind; None when up to date or held."""
    now = timezone.now()
    free = Q(leased_until__isnull=True) | Q(leased_until__lt=now)
    taken = SlackMessage.objects.filter(free, pk=pk, synced__lt=F("wanted")).update(
        leased_until=now + LEASE)
    return SlackMessage.objects.get(pk=pk) if taken else None


def send(message: SlackMessage, sleep: Callable[[float], None]) -> bool:
    """Post or update ``message`` with the interrupt's state, retrying with backoff."""
    interrupt = Interrupt.objects.select_related("run").get(pk=message.interrupt_id)
    text, shown = blocks.message(interrupt)
    waits = config.backoff()
    for attempt in range(len(waits) + 1):
        error = call(message, text, shown)
        if not error:
            SlackMessage.objects.filter(pk=message.pk).update(
                synced=message.wanted, ts=message.ts, channel=message.channel, attempts=0,
                last_error="", updated_at=timezone.now())
            return True
        SlackMessage.objects.filter(pk=message.pk).update(attempts=F("attempts") + 1,
                                                         last_error=error[:1000])
        if attempt < len(waits):
            sleep(waits[attempt])
    logger.warning("Slack message of %s is behind: %s", message.interrupt_id, error)
    return False


def call(message: SlackMessage, text: str, shown: list[dict[str, Any]]) -> str:
    """One chat.postMessage (the first time) or chat.update; "" or the error."""
    from slack_sdk.errors import SlackApiError  # with the client, when first used

    client = config.client()
    try:
        if not message.ts:
            reply = client.chat_postMessage(channel=message.channel, text=text, blocks=shown,
                                            unfurl_links=False)
            message.ts, message.channel = str(reply["ts"]), str(reply["channel"])
        else:
            client.chat_update(channel=message.channel, ts=message.ts, text=text,
                               blocks=shown)
    except SlackApiError as exc:
        return f"Slack refused: {exc.response.get('error', exc)}"
    except Exception as exc:  # unreachable, timed out: Slack's problem, retried
        return f"{type(exc).__name__}: {exc}"
    return ""
