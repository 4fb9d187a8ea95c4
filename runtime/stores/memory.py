"""A checkpoint store in process memory: the default, and the tests' fake."""

from __future__ import annotations

import threading
from functools import partial

from .. import _records
from ..checkpoint import Checkpoint, Growing
from ..errors import CheckpointConflict


class InMemoryCheckpointStore:
    """Keeps step records (``runtime._records``) as JSON text, so callers never share
    mutable state with it; each thread's latest head is kept whole."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[str, str | None, str]] = {}  # id -> thread, base, record
        self._threads: dict[str, list[str]] = {}
        self._heads: dict[str, str] = {}
        self._runs: dict[str, str] = {}  # run id -> latest checkpoint id
        self._lock = threading.Lock()  # callers may run loops in several threads

    async def save(self, cp: Checkpoint) -> None:
        self.save_sync(cp)

    async def load(self, thread_id: str) -> Checkpoint | None:
        return self.load_sync(thread_id)

    def save_sync(self, cp: Checkpoint) -> None:
        encoded = _records.encode(cp)  # before the lock: a bad value changes nothing
        with self._lock:
            chain = self._threads.setdefault(cp.thread_id, [])
            latest = chain[-1] if chain else None
            if cp.parent_id != latest or cp.id in self._records:
                raise CheckpointConflict(cp.thread_id, cp.parent_id, latest)
            chain.append(cp.id)
            self._records[cp.id] = (cp.thread_id, encoded.base_id, encoded.record)
            if _records.is_fork_start(cp, encoded):
                self._heads.pop(cp.thread_id, None)  # rebuilt from the original until saved
            else:
                self._heads[cp.thread_id] = encoded.head
            self._runs[cp.run_id] = cp.id
        cp.mark_saved(partial(self._growing, cp.id))

    def load_sync(self, thread_id: str) -> Checkpoint | None:
        chain = self._threads.get(thread_id)
        if not chain:
            return None
        if thread_id not in self._heads:
            found = self._replayed(chain[-1])
            return found.checkpoint() if found is not None else None
        return _records.loaded(self._heads[thread_id], chain[-1],
                               partial(self._growing, chain[-1]))

    async def load_by_id(self, checkpoint_id: str) -> Checkpoint | None:
        record = self._records.get(checkpoint_id)
        if record is None or record[0] not in self._threads:
            return None
        found = self._replayed(checkpoint_id)
        return found.checkpoint() if found is not None else None

    async def list(self, thread_id: str) -> list[Checkpoint]:
        ids = list(self._threads.get(thread_id, ()))
        if not ids:
            return []
        start = self._replayed(self._records[ids[0]][1])
        records = [self._records[i][2] for i in ids]
        return [r.checkpoint() for r in _records.replay(records, start)]

    async def delete(self, thread_id: str) -> None:
        with self._lock:
            chain = self._threads.pop(thread_id, [])
            self._heads.pop(thread_id, None)
            if chain:
                self._collect()
            self._runs = {r: c for r, c in self._runs.items() if c in self._records
                          and self._records[c][0] in self._threads}

    def _collect(self) -> None:
        """Drop the records of deleted threads that no live thread is built on (a fork
        refers to its original's records up to the fork point)."""
        needed: set[str] = set()
        for chain in self._threads.values():
            base = self._records[chain[0]][1] if chain else None
            while base is not None and base not in needed:
                needed.add(base)
                base = self._records[base][1]
        for checkpoint_id, (thread, _, _) in list(self._records.items()):
            if thread not in self._threads and checkpoint_id not in needed:
                del self._records[checkpoint_id]

    async def load_run(self, run_id: str) -> Checkpoint | None:
        return self.load_run_sync(run_id)

    def load_run_sync(self, run_id: str) -> Checkpoint | None:
        checkpoint_id = self._runs.get(run_id)
        if checkpoint_id is None:
            return None
        thread = self._records[checkpoint_id][0]
        if self._threads[thread][-1] == checkpoint_id:
            return self.load_sync(thread)
        found = self._replayed(checkpoint_id)
        return found.checkpoint() if found is not None else None

    def _growing(self, checkpoint_id: str) -> Growing:
        found = self._replayed(checkpoint_id)
        assert found is not None
        return found.history, found.state, found.resolved

    def _replayed(self, checkpoint_id: str | None) -> _records.Replayed | None:
        """The checkpoint rebuilt from the first record of its lineage (None if unknown
        or its thread was deleted)."""
        if checkpoint_id is None or checkpoint_id not in self._records:
            return None
        chain: list[str] = []
        cursor: str | None = checkpoint_id
        while cursor is not None:
            chain.append(cursor)
            cursor = self._records[cursor][1]
        *_, found = _records.replay((self._records[i][2] for i in reversed(chain)),
                                    skip=len(chain) - 1)
        return found
