"""A checkpoint store in process memory: the default, and the tests' fake."""

from __future__ import annotations

import threading

from ..checkpoint import Draft
from ..errors import CheckpointConflict
from ..store_kit import Lineage, RecordStore, Step, StoredHead


class InMemoryCheckpointStore(RecordStore):
    """Keeps step records (``runtime.store_kit``) as JSON text, so callers never share
    mutable state with it; each thread keeps a recent head whole, where it is due."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[str, str | None, str]] = {}  # id -> thread, base, record
        self._threads: dict[str, list[str]] = {}
        self._heads: dict[str, tuple[str, int]] = {}  # thread -> head, its position
        self._runs: dict[str, str] = {}  # run id -> latest checkpoint id
        self._lock = threading.Lock()  # callers may run loops in several threads

    def append(self, cp: Draft, step: Step) -> None:
        with self._lock:
            chain = self._threads.setdefault(cp.thread_id, [])
            latest = chain[-1] if chain else None
            if cp.parent_id != latest or cp.id in self._records:
                raise CheckpointConflict(cp.thread_id, cp.parent_id, latest)
            chain.append(cp.id)
            base = step.base_id if step.base_id is not None else cp.parent_id
            self._records[cp.id] = (cp.thread_id, base, step.record)
            if step.head_is_due(len(chain)):
                self._heads[cp.thread_id] = (step.head, len(chain))
            elif not step.keeps_head:
                self._heads.pop(cp.thread_id, None)  # rebuilt from the original until saved
            self._runs[cp.run_id] = cp.id
            cp.stored_at = (cp.id, len(chain))

    def read_head(self, thread_id: str) -> StoredHead | None:
        chain = self._threads.get(thread_id)
        if not chain:
            return None
        kept = self._heads.get(thread_id)
        if kept is None:
            return StoredHead(chain[-1], len(chain), None)
        head, position = kept
        after = [self._records[i][2] for i in chain[position:]]
        return StoredHead(chain[-1], len(chain), head, after)

    def read_lineage(self, checkpoint_id: str, visible_only: bool) -> Lineage | None:
        found = self._records.get(checkpoint_id)
        if found is None or (visible_only and found[0] not in self._threads):
            return None
        chain: list[str] = []
        cursor: str | None = checkpoint_id
        while cursor is not None and self._records[cursor][0] == found[0]:
            chain.append(cursor)
            cursor = self._records[cursor][1]
        return Lineage([self._records[i][2] for i in reversed(chain)], cursor)

    def read_thread(self, thread_id: str, stop: int | None = None) -> Lineage | None:
        chain = self._threads.get(thread_id)
        if not chain:
            return None
        last = len(chain) if stop is None else min(stop, len(chain))
        return self.read_lineage(chain[last - 1], visible_only=False)

    def run_latest(self, run_id: str) -> tuple[str, str] | None:
        checkpoint_id = self._runs.get(run_id)
        return None if checkpoint_id is None else (self._records[checkpoint_id][0],
                                                   checkpoint_id)

    def delete_thread(self, thread_id: str) -> None:
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
