"""A base for checkpoint stores that keep step records: what a new backend subclasses.

The base owns the record format (``runtime._records``) and the replay; a backend only
keeps opaque JSON texts and answers a few questions about them. It implements these
primitives, each blocking, each on the backend's own terms (a dict, a table, a file):

- ``append(head, step)``: add ``step.record`` after ``head.parent_id`` in
  ``head.thread_id``, a compare-and-set (``CheckpointConflict`` unless ``head.parent_id``
  is the thread's latest checkpoint, ``None`` for a thread's first); keep ``step.head``
  as the thread's recent head where ``step.head_is_due`` (forget the one kept when
  ``step.keeps_head`` is False: a fork's first checkpoint, rebuilt from the checkpoint it
  was forked from); keep ``step.base_id`` beside the record. ``head`` (a ``Draft``) is
  the saved checkpoint's head, for a backend that mirrors its fields elsewhere.
- ``read_head(thread_id)``: the thread's latest checkpoint id, a recent head and the
  records after it (``StoredHead``), or None for an unknown thread.
- ``read_lineage(checkpoint_id, visible_only)``: the records of the checkpoint's thread
  from its first up to it, and the base of the first (``Lineage``); ``visible_only``:
  None when its thread was deleted (a fork may still need a deleted thread's records).
- ``read_thread(thread_id, stop)``: the same for a thread's records up to position
  ``stop`` (from 1; None: all of them).
- ``run_latest(run_id)``: the thread and latest checkpoint id of a run, or None.
- ``delete_thread(thread_id)``: forget the thread.

``save``, ``load``, ``load_by_id``, ``list``, ``load_run`` and ``delete`` (and their
blocking twins) are built on them once, here: each returns whole, plain checkpoints,
rebuilt by replaying records (never on a run's hot path). So are the executor's
``HeadStore`` methods (``load_head``, ``load_head_by_id``, ``load_run_head``,
``save_head``), which read a recent head and the few records after it, and write one
record. The async methods call the blocking ones through ``call_blocking``, directly by
default; a backend whose calls block on I/O overrides it to run them elsewhere. Every
backend passes ``tests/runtime/store_conformance.py``.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from . import _patch, _records
from ._jsonvalue import dumps_proven
from ._records import Encoded, Replayed
from ._whole_stores import draft_of
from .checkpoint import Additions, Checkpoint, Draft

__all__ = [
    "HEAD_EVERY", "Lineage", "RecordStore", "Step", "StoredHead", "json_text", "patch_of",
]

T = TypeVar("T")


# A large head is kept whole at every HEAD_EVERY-th position of its thread (and at its
# first two), so a save writes what its step changed and a load reads at most
# HEAD_EVERY - 1 records after the head; a small one (``Step.small_head``) at every save.
HEAD_EVERY = 32


@dataclass(frozen=True, slots=True)
class Step:
    """One save as a backend stores it: ``record`` (JSON); the thread's new recent head,
    written whole (JSON) by ``head_text`` when a backend keeps it, which it may only when
    ``keeps_head`` (not for a fork's first checkpoint, rebuilt from the checkpoint it
    was forked from) and should when ``head_is_due``; and ``base_id``: the checkpoint the
    record is written against when that is not its parent (a fork's first), else None.
    """

    record: str
    head_text: Callable[[], str]
    base_id: str | None
    keeps_head: bool = True
    # Is the head, written whole, short enough to write again at every save?
    small_head: bool = True
    # For a backend mirroring rows, so it need not read them back: the interrupts pending
    # in the head the record patches (None: written whole) and that head's run id.
    was_pending: frozenset[str] | None = None
    base_run_id: str | None = None
    # The interrupts this save ended (answered or cancelled).
    ended: tuple[dict[str, Any], ...] = ()

    @property
    def head(self) -> str:
        """The head written whole (JSON)."""
        return self.head_text()

    def head_is_due(self, position: int) -> bool:
        """Should the head be kept whole at ``position`` (from 1) of its thread?"""
        return self.keeps_head and (self.small_head or position % HEAD_EVERY == 0
                                    or position <= 2)


@dataclass(frozen=True, slots=True)
class StoredHead:
    """A thread's latest checkpoint as ``read_head`` finds it: its id and position (from
    1), a head kept whole (None when the thread keeps none) and the records written after
    that head, oldest first, up to the latest."""

    checkpoint_id: str
    position: int
    head: str | None
    after: builtins.list[str] = field(default_factory=builtins.list)


@dataclass(frozen=True, slots=True)
class Lineage:
    """A thread's records from its first up to one checkpoint, oldest first, and the base
    of the first (the checkpoint a fork started from, in another thread), or None."""

    records: builtins.list[str]
    first_base: str | None = None


def patch_of(before: Any, after: Any) -> dict[str, Any] | None:
    """The patch a record keeps of ``after`` against ``before`` (None: the same value):
    ``{"v": value}`` (the whole new value), ``{"d": {key: patch}, "x": [removed keys]}``
    (a dict), ``{"a": [items]}`` (a list that grew at its end) or ``{"l": {index: patch}}``
    (a list of the same length)."""
    return _patch.diff(before, after)


def json_text(value: Any) -> str:
    """Compact JSON text of a checkpoint's value, as a record writes it."""
    return dumps_proven(value)


def _overrides(cls: type, name: str) -> bool:
    """Whether ``cls`` or a class between it and ``RecordStore`` defines ``name``."""
    return getattr(cls, name) is not getattr(RecordStore, name)


def _step_of(cp: Draft, encoded: Encoded, ended: Iterable[dict[str, Any]]) -> Step:
    base = encoded.base_id if encoded.base_id != cp.parent_id else None
    # A fork's first checkpoint keeps no head, which its record and the original's
    # rebuild (so a fork writes almost nothing).
    fork_start = cp.parent_id is None and encoded.base_id is not None
    return Step(encoded.record, encoded.head_text, base, not fork_start, encoded.small,
                encoded.was_pending, encoded.base_run_id, tuple(ended))


class RecordStore(ABC):
    """A ``CheckpointStore`` built on the primitives above; subclasses implement them.

    The executor saves through ``save_head``, which runs ``save_head_sync`` (called
    directly on a store thread), never ``save``: ``save_head_sync`` is the hook that sees
    every save. A subclass that overrides ``save`` or ``save_sync`` alone is refused when
    it is defined, rather than left out of every save a run makes.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        whole = [name for name in ("save", "save_sync") if _overrides(cls, name)]
        if whole and not any(_overrides(cls, name) for name in ("save_head", "save_head_sync")):
            raise TypeError(
                f"{cls.__name__} overrides {' and '.join(whole)}, which runs only for a "
                f"whole checkpoint saved by hand: the executor saves each step through "
                f"save_head(draft), which runs save_head_sync(draft); override "
                f"save_head_sync (calling super()) to act on every save")

    # -- the primitives -----------------------------------------------------------------

    @abstractmethod
    def append(self, head: Draft, step: Step) -> None:
        ...

    @abstractmethod
    def read_head(self, thread_id: str) -> StoredHead | None:
        ...

    @abstractmethod
    def read_lineage(self, checkpoint_id: str, visible_only: bool) -> Lineage | None:
        ...

    @abstractmethod
    def read_thread(self, thread_id: str, stop: int | None = None) -> Lineage | None:
        ...

    @abstractmethod
    def run_latest(self, run_id: str) -> tuple[str, str] | None:
        ...

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        ...

    # -- the store, blocking ------------------------------------------------------------

    def save_sync(self, cp: Checkpoint) -> None:
        """``save``, blocking: ``cp`` kept whole, its growing fields as given."""
        draft = draft_of(cp)
        # Encoded first: a value that is not JSON changes nothing.
        encoded = _records.encode(draft, (cp.history, cp.state, cp.resolved))
        self.append(draft, _step_of(draft, encoded, cp.resolved))
        cp.position = draft.stored_at[1] if draft.stored_at is not None else None

    def load_sync(self, thread_id: str) -> Checkpoint | None:
        """``load``, blocking."""
        found = self.read_head(thread_id)
        return None if found is None else self.load_by_id_sync(found.checkpoint_id)

    def load_by_id_sync(self, checkpoint_id: str) -> Checkpoint | None:
        """``load_by_id``, blocking."""
        lineage = self.read_lineage(checkpoint_id, visible_only=True)
        if lineage is None:
            return None
        cp = self._last_of(lineage).checkpoint()
        cp.position = len(lineage.records)
        return cp

    def list_sync(self, thread_id: str, start: int = 1,
                  stop: int | None = None) -> builtins.list[Checkpoint]:
        """Every checkpoint of the thread, oldest first; or those at positions ``start``
        to ``stop`` (from 1, inclusive), rebuilt from no more records than they need."""
        lineage = self.read_thread(thread_id, stop)
        if lineage is None or not lineage.records:
            return []
        skip = max(start - 1, 0)
        found = []
        replayed = _records.replay(lineage.records, self._rebuild(lineage.first_base), skip)
        for position, one in enumerate(replayed, start=skip + 1):
            cp = one.checkpoint()
            cp.position = position
            found.append(cp)
        return found

    def load_run_sync(self, run_id: str) -> Checkpoint | None:
        """``load_run``, blocking."""
        found = self.run_latest(run_id)
        return None if found is None else self.load_by_id_sync(found[1])

    def delete_sync(self, thread_id: str) -> None:
        """``delete``, blocking."""
        self.delete_thread(thread_id)

    # -- heads, blocking ----------------------------------------------------------------

    def save_head_sync(self, draft: Draft) -> None:
        """``save_head``, blocking: one record of what the run added since its base."""
        encoded = _records.encode(draft)  # first: a value that is not JSON changes nothing
        self.append(draft, _step_of(draft, encoded, draft.additions.resolved))
        draft.additions = Additions()

    def load_head_sync(self, thread_id: str) -> Draft | None:
        """``load_head``, blocking: the latest head brought up to date, ready to go on from."""
        found = self.read_head(thread_id)
        if found is None:
            return None
        if found.head is None:
            return self.load_head_by_id_sync(found.checkpoint_id)
        draft = _records.loaded(found.head, found.checkpoint_id, found.after)
        draft.stored_at = (found.checkpoint_id, found.position)
        return draft

    def load_head_by_id_sync(self, checkpoint_id: str) -> Draft | None:
        """``load_head_by_id``, blocking (a replay of the checkpoint's lineage)."""
        lineage = self.read_lineage(checkpoint_id, visible_only=True)
        if lineage is None:
            return None
        draft = self._last_of(lineage).draft(checkpoint_id)
        draft.stored_at = (checkpoint_id, len(lineage.records))
        return draft

    def load_run_head_sync(self, run_id: str) -> Draft | None:
        """``load_run_head``, blocking."""
        found = self.run_latest(run_id)
        if found is None:
            return None
        thread_id, checkpoint_id = found
        latest = self.load_head_sync(thread_id)
        if latest is not None and latest.id == checkpoint_id:
            return latest
        return self.load_head_by_id_sync(checkpoint_id)

    # -- the store, async ---------------------------------------------------------------

    async def call_blocking(self, fn: Callable[[], T]) -> T:
        """How the async methods below run their blocking halves: right here. A backend
        whose calls block on I/O overrides this to run them elsewhere (a thread)."""
        return fn()

    async def save(self, cp: Checkpoint) -> None:
        await self.call_blocking(partial(self.save_sync, cp))

    async def load(self, thread_id: str) -> Checkpoint | None:
        return await self.call_blocking(partial(self.load_sync, thread_id))

    async def load_by_id(self, checkpoint_id: str) -> Checkpoint | None:
        return await self.call_blocking(partial(self.load_by_id_sync, checkpoint_id))

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        return await self.call_blocking(partial(self.list_sync, thread_id))

    async def delete(self, thread_id: str) -> None:
        await self.call_blocking(partial(self.delete_sync, thread_id))

    async def load_run(self, run_id: str) -> Checkpoint | None:
        return await self.call_blocking(partial(self.load_run_sync, run_id))

    async def save_head(self, draft: Draft) -> None:
        await self.call_blocking(partial(self.save_head_sync, draft))

    async def load_head(self, thread_id: str) -> Draft | None:
        return await self.call_blocking(partial(self.load_head_sync, thread_id))

    async def load_head_by_id(self, checkpoint_id: str) -> Draft | None:
        return await self.call_blocking(partial(self.load_head_by_id_sync, checkpoint_id))

    async def load_run_head(self, run_id: str) -> Draft | None:
        return await self.call_blocking(partial(self.load_run_head_sync, run_id))

    # -- the replay ---------------------------------------------------------------------

    def _rebuild(self, checkpoint_id: str | None) -> Replayed | None:
        """The checkpoint rebuilt from the first record of its lineage, which goes on into
        the thread a fork started from, deleted or not; None if unknown."""
        if checkpoint_id is None:
            return None
        lineage = self.read_lineage(checkpoint_id, visible_only=False)
        return None if lineage is None else self._last_of(lineage)

    def _last_of(self, lineage: Lineage) -> Replayed:
        start = self._rebuild(lineage.first_base)
        *_, last = _records.replay(lineage.records, start, skip=len(lineage.records) - 1)
        return last
