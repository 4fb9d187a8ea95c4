"""The inbox feed's event rows: monotonic ids a reconnecting websocket catches up from.

Ids must become visible in id order: ``write_events`` serialises event writers until they
commit (SQLite's write lock, held from a transaction's first write; an advisory lock on
PostgreSQL, taken by the insert itself before it draws an id: ``queries.events_insert``,
and ``queries.save_all`` for a save's events, written in the save's one statement).
The checkpoint store writes its events inside the save; ``publish_on_commit`` writes a
request's events in a short transaction of their own once the request's transaction has
committed. Either way ``announce`` tells the listeners after the commit: the inbox
registers its channel-layer broadcast when the app is ready, so the store and the
services never import the inbox."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, models, transaction
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from . import queries
from .runs import ID_LENGTH

logger = logging.getLogger(__name__)


class EventKind(models.TextChoices):
    INTERRUPT_CREATED = "interrupt.created"
    INTERRUPT_ANSWERED = "interrupt.answered"
    INTERRUPT_CANCELLED = "interrupt.cancelled"
    INTERRUPT_UPDATED = "interrupt.updated"  # claimed, released or assigned
    RUN_UPDATED = "run.updated"


class EventQuerySet(models.QuerySet["Event"]):
    def after(self, event_id: int) -> EventQuerySet:
        """What a reconnecting client missed since ``event_id``."""
        return self.filter(id__gt=event_id).order_by("id")

    def with_team(self) -> EventQuerySet:
        """Each event annotated with ``team``: its interrupt's, else its run's (None when
        neither row exists). Events carry no team of their own: they are written by
        every kind of change, and the rows they point at already say whose they are."""
        from .interrupts import Interrupt
        from .runs import Run

        of_interrupt = Interrupt.objects.filter(pk=OuterRef("interrupt_id")).values("team")
        of_run = Run.objects.filter(pk=OuterRef("run_id")).values("team")
        return self.annotate(team=Coalesce(Subquery(of_interrupt[:1]), Subquery(of_run[:1])))

    def of_teams(self, teams: frozenset[str] | None) -> EventQuerySet:
        """The events about objects of ``teams`` (``roles.teams_where``; None: every
        event), each with its ``team`` (``with_team``)."""
        found = self.with_team()
        return found if teams is None else found.filter(team__in=sorted(teams))

    def last_id(self) -> int:
        """The newest event id (0 when there is none): a page's catch-up cursor."""
        return self.order_by("-id").values_list("id", flat=True).first() or 0


class Event(models.Model):
    """One change the inbox should hear about; the id is the monotonic event id."""

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    interrupt_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    run_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    root_thread_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = EventQuerySet.as_manager()

    def __str__(self) -> str:
        return f"#{self.id} {self.kind}"


@dataclass(frozen=True, slots=True)
class EventDraft:
    """An inbox event decided while a change is being made, not yet written."""

    kind: str
    run_id: str = ""
    root_thread_id: str = ""
    interrupt_id: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def publish_on_commit(drafts: list[EventDraft], using: str = DEFAULT_DB_ALIAS) -> None:
    """Write and announce ``drafts`` once the current transaction commits."""
    if drafts:
        transaction.on_commit(partial(publish, drafts, using), using=using)


def publish(drafts: list[EventDraft], using: str = DEFAULT_DB_ALIAS) -> list[int]:
    """Write the event rows, then tell the inbox group. Never raises: state is committed."""
    try:
        with transaction.atomic(using=using):
            ids = write_events(drafts, using)
    except Exception:
        logger.exception("could not record %d inbox events", len(drafts))
        return []
    announce(ids)
    return ids


def write_events(drafts: list[EventDraft], using: str = DEFAULT_DB_ALIAS) -> list[int]:
    """Insert event rows as the last statement of the current transaction; their ids.

    Holds the ordering lock until that transaction ends, so no event with a smaller id
    can become visible after this one. Keep it last: the lock waits for other writers.
    """
    if not drafts:
        return []
    return queries.events_insert(using, event_rows(drafts))


def event_rows(drafts: list[EventDraft]) -> list[Event]:
    """The unsaved rows of ``drafts``, made now."""
    now = timezone.now()
    return [Event(kind=d.kind, run_id=d.run_id, root_thread_id=d.root_thread_id,
                  interrupt_id=d.interrupt_id, data=d.data, created_at=now) for d in drafts]


# Called with each batch of committed event ids; the inbox app adds its broadcast.
_listeners: list[Callable[[list[int]], None]] = []


def listen(listener: Callable[[list[int]], None]) -> None:
    """Have ``listener`` told about every batch of committed event ids (once per listener)."""
    if listener not in _listeners:
        _listeners.append(listener)


def announce(event_ids: list[int]) -> None:
    """Tell the listeners about these ids, in order; they must not wait or raise."""
    if event_ids:
        for listener in _listeners:
            listener(event_ids)
