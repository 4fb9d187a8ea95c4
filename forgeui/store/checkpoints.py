"""``DjangoCheckpointStore``: the runtime's ``CheckpointStore`` on the Django ORM.

A thread is a ``Thread`` row (the compare-and-set cell, which also says where a recent
head is kept whole) and one ``Checkpoint`` row per save holding that save's step record
(``runtime.store_kit``): what the step changed, not a copy of what came before. A head is
kept whole where the kit says it is due: a small one in the thread's row at every save, a
large one every ``HEAD_EVERY`` positions in that checkpoint's row (the one kept before is
cleared), so the thread's row, which every save updates, stays small however long the
conversation; a load brings the head up to date from the records after it.

``save`` is one transaction: the conditional update of the thread row, the checkpoint
row, the ``Run`` / ``Interrupt`` rows that mirror it (``rows``) and the inbox ``Event``
rows it causes, sent as named statements (``models.queries``; on PostgreSQL one
statement in all), the events announced on the channel layer after the commit. This
module is the one place where the database's ``IntegrityError`` becomes
``CheckpointConflict``.

The protocol is async; the ORM is sync. Each async method runs its sync half through
``sync_to_async`` (thread-sensitive, like Django's own async ORM methods). Sync callers
(the tasks) use the executor's ``*_sync`` methods, which call the sync halves on the
caller's own thread, and ``async_to_sync`` only for a run that needs an event loop
(``run_from_sync``).
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Coroutine
from contextlib import nullcontext
from datetime import UTC, datetime
from functools import partial
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import async_to_sync, sync_to_async
from django.db import DEFAULT_DB_ALIAS, DatabaseError, IntegrityError, connections, transaction

from runtime import (
    CheckpointConflict,
    Draft,
    Lineage,
    RecordStore,
    Step,
    StoredHead,
)

from .. import models
from ..models import queries
from ..models.events import announce, event_rows, write_events
from .rows import mirror

P = ParamSpec("P")
T = TypeVar("T")


def _in_thread_row(step: Step, head: str) -> str:
    """What the thread's row keeps of a head written whole: a small one; "" for a large
    one, which its checkpoint's row keeps."""
    return head if step.small_head else ""


def _in_thread(fn: Callable[P, T]) -> Callable[P, Any]:
    return sync_to_async(fn, thread_sensitive=True)


def _checkpoint_writes(using: str, cp: Draft, step: Step, seq: int) -> list[queries.Write]:
    """The thread row's compare-and-set (or its first row) and the checkpoint's row; where
    this checkpoint keeps a large head, the one kept before is cleared."""
    whole = step.head_is_due(seq)
    head = step.head if whole else ""
    kept_here = whole and not step.small_head
    if cp.parent_id is None:
        writes = [queries.thread_insert(using, cp.thread_id, cp.id,
                                        _in_thread_row(step, head), 1 if head else 0)]
    else:
        writes = [queries.thread_move(cp.thread_id, cp.parent_id, cp.id, seq,
                                      _in_thread_row(step, head) if whole else None)]
    if kept_here:  # the thread keeps one head: the one it kept before goes
        writes.append(queries.kept_heads_clear(cp.thread_id))
    writes.append(queries.checkpoint_insert(using, {
        "id": cp.id, "thread_id": cp.thread_id, "seq": seq, "run_id": cp.run_id,
        "parent_id": cp.parent_id or "", "base_id": step.base_id or "",
        "node": cp.node or "", "status": cp.status, "step": cp.step,
        "created_at": datetime.fromtimestamp(cp.created_at / 1000, UTC),
        "record": step.record, "head": head if kept_here else ""}))
    return writes


class DjangoCheckpointStore(RecordStore):
    """Checkpoints in ``forgeui.models``; ``using`` names the database alias."""

    def __init__(self, using: str = DEFAULT_DB_ALIAS) -> None:
        self.using = using

    def __repr__(self) -> str:
        return f"DjangoCheckpointStore(using={self.using!r})"

    async def call_blocking(self, fn: Callable[[], T]) -> T:
        """The store kit's async methods run their blocking halves through the ORM, which
        may not block an event loop: on the thread-sensitive thread, as Django's own
        async ORM methods do."""
        result: T = await _in_thread(fn)()
        return result

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        """``BlockingStore``: run ``fn`` where the sync halves may be called (the thread
        the ORM calls above run in); the executor runs lone sync steps there."""
        return await self.call_blocking(fn)

    def can_block_here(self) -> bool:
        """``BlockingStore``: always; a sync caller's thread saves on its own connection,
        inside the caller's transaction as a savepoint of it."""
        return True

    def run_from_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """``SyncRunner``: ``async_to_sync``, as Django's own code does, so the calls made
        from that loop (``_in_thread``) come back to this waiting thread. Under
        ``asyncio.run`` they would go where a request's thread-sensitive context sends
        them: to this very thread, blocked, so they would never run."""
        async def awaited() -> T:
            return await coro

        result: T = async_to_sync(awaited)()
        return result

    # -- the store kit's primitives ----------------------------------------------------

    def append(self, cp: Draft, step: Step) -> None:
        """The save's one transaction (see the module's docstring). On PostgreSQL it is
        one statement (``queries.save_all``), events included; outside a caller's
        transaction that statement is the transaction, with no BEGIN and COMMIT of its
        own to wait for."""
        one = queries.one_statement(self.using)
        alone = one and transaction.get_autocommit(using=self.using)
        try:
            with nullcontext() if alone else transaction.atomic(using=self.using):
                seq = self._position(cp)
                self._write(cp, step, seq, one)
        except IntegrityError as exc:
            conflict = self._conflict_behind(cp)
            if conflict is None:
                raise
            raise conflict from exc
        except DatabaseError:
            if alone:  # a connection that broke goes, as a failed transaction's would
                connections[self.using].close_if_unusable_or_obsolete()
            raise
        cp.stored_at = (cp.id, seq)

    def _write(self, cp: Draft, step: Step, seq: int, one: bool) -> None:
        """The save's rows and the events they cause; ``one``: all in one statement."""
        writes = _checkpoint_writes(self.using, cp, step, seq)
        rows = mirror(cp, self.using, step.ended, step.was_pending,
                      run_exists=step.base_run_id == cp.run_id)
        if one:  # a lost compare-and-set writes nothing, events included
            made = event_rows([e.draft for e in rows.events])
            events = [(row, [len(writes) + i for i in e.when])
                      for row, e in zip(made, rows.events, strict=True)]
            touched, ids = queries.save_all(self.using, writes + rows.writes, events)
        else:
            touched, ids = queries.write_all(self.using, writes + rows.writes), []
        if not touched[0]:
            raise CheckpointConflict(cp.thread_id, cp.parent_id,
                                     self._latest_id(cp.thread_id))
        if not one:  # last: the event ordering lock waits for other writers
            ids = write_events(rows.finish(self.using, touched[len(writes):]), self.using)
        if ids:  # at once when the statement was its own transaction
            transaction.on_commit(partial(announce, ids), using=self.using)

    def _position(self, cp: Draft) -> int:
        """Where ``cp`` goes in its thread: after its parent, whose position the executor
        knows, or else reads (``CheckpointConflict`` if the parent is not the latest)."""
        if cp.parent_id is None:
            return 1
        known = cp.stored_at
        if known is not None and known[0] == cp.parent_id:
            return int(known[1]) + 1
        seq = queries.thread_seq(self.using, cp.thread_id, cp.parent_id)
        if seq is None:
            raise CheckpointConflict(cp.thread_id, cp.parent_id, self._latest_id(cp.thread_id))
        return seq + 1

    def read_head(self, thread_id: str) -> StoredHead | None:
        """Every load's first read, so named statements: nothing to compile on a turn's
        path."""
        row = queries.thread_head(self.using, thread_id)
        if row is None:
            return None
        latest, head, seq, head_seq = row
        if not head_seq:  # a fork's first checkpoint: rebuilt from the original's records
            return StoredHead(latest, seq, None)
        after: builtins.list[str] = []
        if not head:  # a large head: one query for its row and the records after it
            kept = queries.thread_records(self.using, thread_id, head_seq, seq)
            head, after = kept[0][0], [record for _, record in kept[1:]]
        elif head_seq < seq:
            after = [record for _, record in
                     queries.thread_records(self.using, thread_id, head_seq + 1, seq)]
        return StoredHead(latest, seq, head, after)

    def read_lineage(self, checkpoint_id: str, visible_only: bool) -> Lineage | None:
        found = self._checkpoints().filter(pk=checkpoint_id)
        if visible_only:
            found = found.filter(thread__deleted=False)
        row = found.values_list("thread_id", "seq").first()
        if row is None:
            return None
        return self._lineage(self._checkpoints().filter(thread_id=row[0], seq__lte=row[1]))

    def read_thread(self, thread_id: str, stop: int | None = None) -> Lineage | None:
        if not models.Thread.objects.using(self.using).filter(pk=thread_id,
                                                               deleted=False).exists():
            return None
        rows = self._checkpoints().filter(thread_id=thread_id)
        return self._lineage(rows if stop is None else rows.filter(seq__lte=stop))

    @staticmethod
    def _lineage(rows: models.CheckpointQuerySet) -> Lineage:
        found = builtins.list(rows.order_by("seq").values_list("record", "base_id"))
        return Lineage([record for record, _ in found], found[0][1] or None if found else None)

    def run_latest(self, run_id: str) -> tuple[str, str] | None:
        return queries.run_latest(self.using, run_id)

    def delete_thread(self, thread_id: str) -> None:
        """Forget the thread and the runs mirrored from it. Records a fork builds on stay,
        hidden under a new thread id, until no thread needs them. The audit log keeps the
        deletion: a start accepted for the thread is not begun again by ``recover_runs``."""
        with transaction.atomic(using=self.using):
            models.AuditEntry.objects.using(self.using).create(
                action=models.THREAD_DELETED, object_type="thread", object_id=thread_id,
                thread_id=thread_id)
            self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        """``delete_thread``'s work, also done to a hidden thread no fork needs any more."""
        with transaction.atomic(using=self.using):
            models.Run.objects.using(self.using).filter(thread_id=thread_id).delete()
            threads = models.Thread.objects.using(self.using)
            first_base = (self._checkpoints().filter(thread_id=thread_id)
                          .order_by("seq").values_list("base_id", flat=True).first())
            if self._forks_of(thread_id).exists():
                hidden = f"{thread_id}#deleted-{uuid.uuid4().hex}"
                threads.filter(pk=thread_id).update(deleted=True, head="", head_seq=0)
                self._checkpoints().filter(thread_id=thread_id).update(thread_id=hidden)
                threads.filter(pk=thread_id).update(thread_id=hidden)
                return
            threads.filter(pk=thread_id).delete()
            if first_base:
                self._collect(first_base)

    def count_sync(self, thread_id: str) -> int:
        """How many checkpoints the thread has (0 for an unknown or deleted thread)."""
        seq = (models.Thread.objects.using(self.using).filter(pk=thread_id, deleted=False)
               .values_list("seq", flat=True).first())
        return int(seq or 0)

    def _forks_of(self, thread_id: str) -> models.CheckpointQuerySet:
        """Checkpoints of other threads whose records build on this thread's."""
        own = self._checkpoints().filter(thread_id=thread_id).values("id")
        return self._checkpoints().filter(base_id__in=own).exclude(thread_id=thread_id)

    def _collect(self, checkpoint_id: str) -> None:
        """The thread of ``checkpoint_id``, if deleted, goes once no fork needs it."""
        row = (self._checkpoints().filter(pk=checkpoint_id, thread__deleted=True)
               .values_list("thread_id", flat=True).first())
        if row is not None:
            models.Thread.objects.using(self.using).filter(pk=row).update(deleted=False)
            self._forget(row)

    # -- helpers --------------------------------------------------------------------

    def _checkpoints(self) -> models.CheckpointQuerySet:
        return models.Checkpoint.objects.using(self.using)  # type: ignore[return-value]

    def _latest_id(self, thread_id: str) -> str | None:
        return (
            models.Thread.objects.using(self.using)
            .filter(pk=thread_id)
            .values_list("latest_checkpoint_id", flat=True)
            .first()
        )

    def _conflict_behind(self, cp: Draft) -> CheckpointConflict | None:
        """Is this ``IntegrityError`` a lost compare-and-set (or a reused id)? Else a bug."""
        latest = self._latest_id(cp.thread_id)
        reused = self._checkpoints().filter(pk=cp.id).exists()
        if latest != cp.parent_id or reused:
            return CheckpointConflict(cp.thread_id, cp.parent_id, latest)
        return None
