"""Mirror a checkpoint into the ``Run`` and ``Interrupt`` rows, inside the save transaction.

The checkpoint is the truth; these rows exist so the inbox, the API and the admin can
query runs and interrupts without unpacking JSON. A row a person already changed (an
interrupt answered through the dashboard before the runtime applied it) is never moved
back to pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.utils import timezone

from forgeui.permissions import teams
from runtime.checkpoint import Head

from ..models import AgentRequest, EventKind, Interrupt, InterruptStatus, RunStatus, queries
from ..models import assignees as assignment  # the stored form of assignees
from ..models.events import EventDraft
from ..models.requests import REQUEST_GRAPH


def from_ms(value: Any, default: datetime) -> datetime:
    """The runtime counts milliseconds since the epoch; the database wants datetimes."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return default


class Deserved(NamedTuple):
    """An event and the writes (indexes among the mirror's) one of which must touch a row
    for it to be deserved; none: it always is."""

    draft: EventDraft
    when: tuple[int, ...] = ()


class Mirror(NamedTuple):
    """A save's writes to the run and interrupt rows (in the save's batch, after its own;
    the run row's first), the events they deserve, and the run row's upsert should its
    move touch nothing (None: the run's write is the upsert)."""

    writes: list[queries.Write]
    events: list[Deserved]
    missing_run: queries.Write | None = None

    def finish(self, using: str, touched: list[int]) -> list[EventDraft]:
        """After the writes ran one by one (how many rows each touched): the run row made
        if its move found none, and the events deserved."""
        if self.missing_run is not None and not touched[0]:  # not there after all
            queries.write_all(using, [self.missing_run])
        return [e.draft for e in self.events if not e.when or any(touched[i] for i in e.when)]


def mirror(cp: Head, using: str, ended: Sequence[dict[str, Any]] = (),
           was_pending: frozenset[str] | None = None, run_exists: bool = False) -> Mirror:
    """Mirror ``cp`` into its run's row and interrupt rows. ``ended``: the interrupts this
    save ended (answered or cancelled). ``was_pending``: the
    interrupts pending at the checkpoint ``cp`` follows, when known; ``run_exists``: that
    checkpoint mirrored this same run, so its row is there (a save that is one statement
    upserts the row all the same: no later statement of it could make a missing row). (A
    run moved to running by an accepted answer or a recover was announced when it was
    accepted, so a claim's save announces nothing.)"""
    interrupts = interrupt_writes(cp, using, ended, was_pending)
    events = [Deserved(e.draft, tuple(i + 1 for i in e.when)) for e in interrupts.events]
    run_updated = EventDraft(EventKind.RUN_UPDATED, cp.run_id, root_of(cp),
                             data={"status": cp.status, "checkpoint_id": cp.id})
    if cp.status != RunStatus.RUNNING or cp.parent_id is None or any(
            not e.when for e in events):
        events.append(Deserved(run_updated))
    elif events:  # announced with the interrupt events, if any is
        events.append(Deserved(run_updated, tuple(i for e in events for i in e.when)))
    if run_exists and not queries.one_statement(using):
        return Mirror([run_write(cp, using, exists=True), *interrupts.writes], events,
                      run_write(cp, using, exists=False))
    return Mirror([run_write(cp, using, exists=False), *interrupts.writes], events)


def root_of(cp: Head) -> str:
    return cp.root_thread_id or cp.thread_id


def run_write(cp: Head, using: str, exists: bool) -> queries.Write:
    """The run row's write for ``cp``: a move of the row when it is known to be there
    (it touches nothing if it is not), else an upsert."""
    now = timezone.now()
    moved = {"status": cp.status, "output": cp.output, "error": cp.error,
             "latest_checkpoint_id": cp.id, "updated_at": now}
    if exists:
        return queries.run_move(using, cp.run_id, moved)
    started_by = cp.metadata.get("started_by")
    return queries.run_upsert(using, {
        "run_id": cp.run_id, "thread_id": cp.thread_id, "root_thread_id": root_of(cp),
        "parent_run_id": cp.parent_run_id, "graph": cp.graph, "namespace": cp.namespace,
        "sub_agent_id": cp.sub_agent_id or "", "input": run_input(cp),
        "started_by_id": started_by if isinstance(started_by, int) else None,
        "created_at": from_ms(cp.created_at, now), "team": team_of(cp, using), **moved})


def team_of(cp: Head, using: str) -> str:
    """The team owning ``cp``'s run: its graph's, or for a request, its agent's."""
    if not teams.enabled():
        return teams.NO_TEAM
    if cp.graph == REQUEST_GRAPH:
        return (AgentRequest.objects.using(using).filter(pk=root_of(cp))
                .values_list("team", flat=True).first() or teams.NO_TEAM)
    return teams.team_of_graph(cp.graph)


def run_input(cp: Head) -> Any:
    """What the run was started with, readable while it is at its first step."""
    if cp.step == 0 and len(cp.engine.tasks) == 1:
        return cp.engine.tasks[0].get("input")
    return None


def interrupt_writes(cp: Head, using: str, closing: Sequence[dict[str, Any]] = (),
                     was_pending: frozenset[str] | None = None) -> Mirror:
    """Create, move and close interrupt rows. What was pending before says which rows
    exist; when that is not known, the rows are read. A row a person already moved away
    from pending stays as it is; only a move away from pending is an event. ``closing``:
    the interrupts this save ended."""
    pending = [i["id"] for i in cp.interrupts]
    if not pending and not closing:
        return Mirror([], [])
    rows = Interrupt.objects.using(using)
    statuses, known = _existing(rows, pending + [r["id"] for r in closing], was_pending)
    writes: list[queries.Write] = []
    new = [i for i in cp.interrupts if i["id"] not in known]
    team = team_of(cp, using) if new or closing else teams.NO_TEAM
    if new:
        writes.append(queries.interrupts_insert(
            using, [interrupt_row(cp, data, InterruptStatus.PENDING, team) for data in new]))
    # Like the runtime's Interrupt.checkpoint_id: the run's latest checkpoint, which a
    # client sends back as expected_checkpoint_id. One with an accepted answer takes no
    # other answer, so its row keeps the checkpoint it was answered at.
    answered = cp.engine.answers
    still_pending = [i for i in pending if i in known and i not in answered]
    if still_pending:
        writes.append(queries.interrupts_at(still_pending, cp.id))
    events = [Deserved(EventDraft(EventKind.INTERRUPT_CREATED, cp.run_id, root_of(cp),
                                  data["id"])) for data in new]
    for data in closing:
        if statuses.get(data["id"], InterruptStatus.PENDING) != InterruptStatus.PENDING:
            continue
        write, kind = _closed(cp, using, data, data["id"] in known
                              or rows.filter(pk=data["id"]).exists(), team)
        writes.append(write)
        events.append(Deserved(EventDraft(kind, cp.run_id, root_of(cp), data["id"]),
                               (len(writes) - 1,)))
    return Mirror(writes, events)


def _existing(rows: Any, ids: list[str], was_pending: frozenset[str] | None
              ) -> tuple[dict[str, str], frozenset[str]]:
    """Which of ``ids`` have rows, and their statuses when they had to be read."""
    if was_pending is not None:
        return {}, was_pending
    statuses = dict(rows.filter(pk__in=ids).values_list("id", "status"))
    return statuses, frozenset(statuses)


def _closed(cp: Head, using: str, data: dict[str, Any],
            has_row: bool, team: str) -> tuple[queries.Write, EventKind]:
    """The write that closes one interrupt's row (or makes it closed), and its event."""
    status = (InterruptStatus.CANCELLED if data.get("status") == "cancelled"
              else InterruptStatus.ANSWERED)
    answered_at = from_ms(data.get("answered_at"), timezone.now())
    if has_row:
        write = queries.interrupt_close(using, data["id"], status, answered_at)
    else:
        row = interrupt_row(cp, data, status, team)
        row.answered_at = answered_at
        write = queries.interrupts_insert(using, [row])
    kind = (EventKind.INTERRUPT_CANCELLED if status == InterruptStatus.CANCELLED
            else EventKind.INTERRUPT_ANSWERED)
    return write, kind


def interrupt_row(cp: Head, data: dict[str, Any], status: str, team: str) -> Interrupt:
    now = timezone.now()
    deadline = data.get("deadline_at")
    return Interrupt(
        id=data["id"], run_id=data.get("run_id") or cp.run_id,
        thread_id=data.get("thread_id") or cp.thread_id, root_thread_id=root_of(cp),
        node=data.get("node") or "", task_id=data.get("task_id") or "",
        namespace=data.get("namespace") or cp.namespace,
        sub_agent_id=data.get("sub_agent_id") or "",
        checkpoint_id=data.get("checkpoint_id") or cp.id, payload=data.get("payload"),
        order=data.get("order", 0), kind=data.get("kind", "node"),
        has_default=bool(data.get("has_default")), default=data.get("default"),
        assignees=assignment.from_record(data.get("assignees")),
        summary_fields=data.get("summary_fields") or [],
        sensitive=data.get("sensitive") or [], team=team,
        status=status, created_at=from_ms(data.get("created_at"), from_ms(cp.created_at, now)),
        deadline_at=from_ms(deadline, now) if deadline else None,
    )
