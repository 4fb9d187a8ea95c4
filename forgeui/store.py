"""``DjangoCheckpointStore``: the runtime's ``CheckpointStore`` on the Django ORM.

``save`` is one transaction: the compare-and-set on ``Thread.latest_checkpoint_id`` (an
``UPDATE ... WHERE latest = parent RETURNING seq``, or the ``INSERT`` of the thread row
for a first checkpoint), the checkpoint row, the ``Run`` / ``Interrupt`` rows that mirror
it and the inbox ``Event`` rows it causes; the events are announced on the channel layer
after the commit. This module is the one place where the database's ``IntegrityError``
becomes ``CheckpointConflict``.

Event ids must become visible in id order, or a client catching up "after id N" could
skip an event that committed late. Writing them inside the save keeps them atomic with
the change (no commit of its own, none lost in a crash between two commits), and the
ordering holds because event writers are serialised until they commit
(``events.write_events``), and the insert is the save's last statement.

The protocol is async; the ORM is sync. Each method runs its ORM work through
``sync_to_async`` (thread-sensitive, like Django's own async ORM methods), so it works
under ``asyncio.run`` in a worker thread, under ``async_to_sync`` (then the queries run in
the calling thread and reuse its connection) and in async tests. Sync callers (the tasks)
use the executor's ``*_sync`` methods instead: the blocking halves below, on the caller's
own thread, and ``async_to_sync`` only for a run that needs an event loop
(``run_from_sync``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from functools import partial
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import async_to_sync, sync_to_async
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.utils import timezone

from runtime.checkpoint import Checkpoint
from runtime.errors import CheckpointConflict

from . import fastsql, models, savesql, unwaited
from .events import EventDraft, announce, write_events
from .recent import recent_checkpoints
from .saveplan import SavePlan, plan_save
from .savesql import DumpedJson
from .sync import RUN_UPDATE_FIELDS, run_row, sync_rows, upsert_run

P = ParamSpec("P")
T = TypeVar("T")


def _in_thread(fn: Callable[P, T]) -> Callable[P, Any]:
    return sync_to_async(fn, thread_sensitive=True)


class DjangoCheckpointStore:
    """Checkpoints in ``forgeui.models``; ``using`` names the database alias."""

    def __init__(self, using: str = DEFAULT_DB_ALIAS) -> None:
        self.using = using

    def __repr__(self) -> str:
        return f"DjangoCheckpointStore(using={self.using!r})"

    async def save(self, cp: Checkpoint) -> None:
        """Append ``cp`` to its thread; ``CheckpointConflict`` unless its parent is latest."""
        await _in_thread(self.save_sync)(cp)

    async def load(self, thread_id: str) -> Checkpoint | None:
        """The thread's latest checkpoint, or None."""
        return await _in_thread(self.load_sync)(thread_id)

    async def load_by_id(self, checkpoint_id: str) -> Checkpoint | None:
        """One checkpoint by id, or None."""
        return await _in_thread(self.load_by_id_sync)(checkpoint_id)

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of the thread, oldest first."""
        return await _in_thread(self.list_sync)(thread_id)

    async def delete(self, thread_id: str) -> None:
        """Forget the thread, its checkpoints and the runs mirrored from it."""
        await _in_thread(self.delete_sync)(thread_id)

    async def load_run(self, run_id: str) -> Checkpoint | None:
        """The latest checkpoint of run ``run_id``, or None."""
        return await _in_thread(self.load_run_sync)(run_id)

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        """``BlockingStore``: run ``fn`` where the sync halves may be called (the thread
        the ORM calls above run in); the executor runs lone sync steps there."""
        result: T = await _in_thread(fn)()
        return result

    def can_block_here(self) -> bool:
        """``BlockingStore``: always; a sync caller's thread saves on its own connection.
        Inside the caller's transaction each save is a savepoint of it (``save_sync``),
        and a run that goes on in an event loop saves there too (``run_from_sync``)."""
        return True

    def run_from_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """``SyncRunner``: how the executor's ``*_sync`` methods run a coroutine (a run
        that needs an event loop). ``async_to_sync``, as Django's own code does: the
        calls made from that loop (``_in_thread``) come back to this thread, which waits
        for them. Under ``asyncio.run`` they would go where a request's thread-sensitive
        context sends them: to this very thread, blocked, so they would never run."""
        async def awaited() -> T:
            return await coro

        result: T = async_to_sync(awaited)()
        return result

    # The sync halves: for tasks, commands and views that are sync already.

    def save_sync(self, cp: Checkpoint, durable: bool = True) -> None:
        """``save``, blocking; ``durable=False`` (a claim): commit without waiting for
        the disk (``unwaited``), unless the commit is a caller's."""
        connection = connections[self.using]
        plan = plan_save(cp)
        in_callers = _in_callers_transaction(connection)
        unwait = not durable and not in_callers
        # Until a commit here says otherwise, this process's copy of the thread may be
        # stale (lost race, failure, a caller's transaction that may roll back).
        recent_checkpoints.forget(self.using, cp.thread_id)
        try:
            if plan is None:
                self._save_reading_rows(cp, connection, unwait)
            elif in_callers:
                # A savepoint, announced on the caller's commit.
                with transaction.atomic(using=self.using):
                    ids = self._write_planned(plan, connection, DumpedJson(cp.to_json()))
                if ids:
                    transaction.on_commit(partial(announce, ids), using=self.using)
            else:
                data = DumpedJson(cp.to_json())
                announce(self._write_planned(plan, connection, data, own_transaction=True,
                                             unwait=unwait))
                recent_checkpoints.put(self.using, cp.thread_id, data.text)
        except IntegrityError as exc:
            conflict = self._conflict_behind(cp)
            if conflict is None:
                raise
            raise conflict from exc
        if plan is not None:
            plan.remember()

    def recent_sync(self, thread_id: str) -> Checkpoint | None:
        """``BlockingStore``: the thread's checkpoint as this process last committed it,
        if remembered (``recent``): a guess for a compare-and-set, no database call."""
        text = recent_checkpoints.get(self.using, thread_id)
        return None if text is None else Checkpoint.from_json(text)

    def _write_planned(self, plan: SavePlan, connection: Any, data: DumpedJson,
                       own_transaction: bool = False, unwait: bool = False,
                       ) -> builtins.list[int]:
        """The planned save; its event ids. ``own_transaction``: begin and commit here
        (``unwait``: without waiting for the disk)."""
        cp, now = plan.cp, timezone.now()
        cp_row, mirrored = _checkpoint_row(cp, data), run_row(cp)
        if connection.vendor == "postgresql":
            # Outside a transaction this one statement is its own: one round trip.
            sql, params = savesql.postgres_statement(plan, cp_row, mirrored, now, connection,
                                                     unwait=unwait)
            row = fastsql.prepared_fetchone(connection, sql, params)
            if row is None:
                raise self._lost(cp)
            if not row[2]:  # the run's row, updated in place, was deleted meanwhile
                upsert_run(cp, self.using)
            return list(row[1])
        connection.ensure_connection()
        raw = connection.connection
        with connection.wrap_database_errors, _sqlite_commits(raw, unwait):
            cursor = raw.cursor()
            if own_transaction:
                cursor.execute("BEGIN IMMEDIATE")
            try:
                done = savesql.sqlite_writes(plan, cp_row, mirrored, now, cursor, connection)
                if done is None:
                    raise self._lost(cp)
                if own_transaction:
                    cursor.execute("COMMIT")
            except BaseException:
                if own_transaction and raw.in_transaction:
                    cursor.execute("ROLLBACK")
                raise
            finally:
                cursor.close()
        return done[1]

    def _save_reading_rows(self, cp: Checkpoint, connection: Any, unwait: bool = False,
                           ) -> None:
        """The general save: interrupt rows read back where this process has no record
        (``unwait``: commit without waiting for the disk)."""
        postgres = connection.vendor == "postgresql"
        if not postgres:
            connection.ensure_connection()
        with (_sqlite_commits(connection.connection, unwait and not postgres),
              transaction.atomic(using=self.using)):
            if postgres:
                if unwait:
                    with connection.cursor() as cursor:
                        cursor.execute(unwaited.POSTGRES_SET_LOCAL)
                self._advance_and_insert(cp, connection)
            else:
                self._insert(cp, self._advance(cp))
                upsert_run(cp, self.using)
            self._record_events(sync_rows(cp, self.using))

    def load_sync(self, thread_id: str) -> Checkpoint | None:
        return _decoded(fastsql.latest_json(models.Checkpoint, "data", "thread", self.using,
                                            thread_id))

    def load_by_id_sync(self, checkpoint_id: str) -> Checkpoint | None:
        return _first(self._checkpoints().filter(pk=checkpoint_id))

    def list_sync(self, thread_id: str) -> builtins.list[Checkpoint]:
        rows = self._checkpoints().of_thread(thread_id).values_list("data", flat=True)
        return [Checkpoint.from_dict(data) for data in rows]

    def delete_sync(self, thread_id: str) -> None:
        recent_checkpoints.forget(self.using, thread_id)
        with transaction.atomic(using=self.using):
            models.Run.objects.using(self.using).filter(thread_id=thread_id).delete()
            models.Thread.objects.using(self.using).filter(pk=thread_id).delete()

    def load_run_sync(self, run_id: str) -> Checkpoint | None:
        # Every save moves its run's row to the checkpoint it saves, in its transaction.
        return _decoded(fastsql.pointed_json(
            models.Checkpoint, "data", (models.Run, "run_id", "latest_checkpoint_id"),
            self.using, run_id))

    def _checkpoints(self) -> models.CheckpointQuerySet:
        return models.Checkpoint.objects.using(self.using)  # type: ignore[return-value]

    def _advance(self, cp: Checkpoint) -> int:
        """The compare-and-set: move the thread to ``cp`` and return its position."""
        first = cp.parent_id is None
        sql = fastsql.advance_sql(models.Thread._meta.db_table, first)
        with connections[self.using].cursor() as cursor:
            # One statement, so no other writer can slip in between the check and the move.
            cursor.execute(sql, _advance_params(cp))
            row = cursor.fetchone()
        if row is None:
            raise self._lost(cp)
        return int(row[0])

    def _insert(self, cp: Checkpoint, seq: int) -> None:
        fastsql.insert(models.Checkpoint, {**_checkpoint_row(cp), "seq": seq}, self.using)

    def _advance_and_insert(self, cp: Checkpoint, connection: Any) -> None:
        """PostgreSQL: the compare-and-set, checkpoint row and run upsert in one round trip."""
        row, run = _checkpoint_row(cp), run_row(cp)
        sql = fastsql.advance_and_insert(
            fastsql.advance_sql(models.Thread._meta.db_table, cp.parent_id is None),
            (models.Checkpoint, tuple(row)), (models.Run, tuple(run), "run_id", RUN_UPDATE_FIELDS),
            connection,
        )
        params = (_advance_params(cp) + fastsql.prepare(models.Checkpoint, row, connection)
                  + fastsql.prepare(models.Run, run, connection))
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            if cursor.fetchone() is None:
                raise self._lost(cp)

    def _lost(self, cp: Checkpoint) -> CheckpointConflict:
        return CheckpointConflict(cp.thread_id, cp.parent_id, self._latest_id(cp.thread_id))

    def _record_events(self, drafts: builtins.list[EventDraft]) -> None:
        """The save's last statements: event rows in commit order; announce after commit."""
        if drafts:
            ids = write_events(drafts, self.using)
            transaction.on_commit(partial(announce, ids), using=self.using)

    def _latest_id(self, thread_id: str) -> str | None:
        return (
            models.Thread.objects.using(self.using)
            .filter(pk=thread_id)
            .values_list("latest_checkpoint_id", flat=True)
            .first()
        )

    def _conflict_behind(self, cp: Checkpoint) -> CheckpointConflict | None:
        """Is this ``IntegrityError`` a lost compare-and-set (or a reused id)? Else a bug."""
        latest = self._latest_id(cp.thread_id)
        reused = self._checkpoints().filter(pk=cp.id).exists()
        if latest != cp.parent_id or reused:
            return CheckpointConflict(cp.thread_id, cp.parent_id, latest)
        return None


def _sqlite_commits(raw: Any, unwait: bool) -> AbstractContextManager[None]:
    """Where a SQLite save commits: without waiting for the disk if ``unwait``."""
    return unwaited.sqlite_unwaited(raw) if unwait else nullcontext()


def _in_callers_transaction(connection: Any) -> bool:
    """A caller's ``atomic`` block, or autocommit turned off: its commit is not ours."""
    return bool(connection.in_atomic_block or not connection.get_autocommit())


def _advance_params(cp: Checkpoint) -> builtins.list[Any]:
    if cp.parent_id is None:
        return [cp.thread_id, cp.id]
    return [cp.id, cp.thread_id, cp.parent_id]


def _checkpoint_row(cp: Checkpoint, data: Any = None) -> dict[str, Any]:
    """The checkpoint row's values but ``seq``, which the compare-and-set decides
    (``data``: the checkpoint as already dumped, if it is)."""
    return {
        "id": cp.id, "thread": cp.thread_id, "run_id": cp.run_id,
        "parent_id": cp.parent_id or "", "node": cp.node or "", "status": cp.status,
        "step": cp.step, "created_at": datetime.fromtimestamp(cp.created_at / 1000, UTC),
        "data": cp.to_dict() if data is None else data,
    }


def _decoded(data: dict[str, Any] | None) -> Checkpoint | None:
    return None if data is None else Checkpoint.from_dict(data)


def _first(rows: models.CheckpointQuerySet) -> Checkpoint | None:
    """The first row's checkpoint, reading only its ``data`` column."""
    data = rows.values_list("data", flat=True)[:1]
    return Checkpoint.from_dict(data[0]) if data else None
