"""A checkpoint store in process memory: the default, and the tests' fake."""

from __future__ import annotations

import threading

from ..checkpoint import Checkpoint
from ..errors import CheckpointConflict


class InMemoryCheckpointStore:
    """Keeps checkpoints as JSON text, so callers never share mutable state with it."""

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}
        self._threads: dict[str, list[str]] = {}
        self._runs: dict[str, str] = {}  # run id -> latest checkpoint id
        self._lock = threading.Lock()  # callers may run loops in several threads

    async def save(self, cp: Checkpoint) -> None:
        self.save_sync(cp)

    async def load(self, thread_id: str) -> Checkpoint | None:
        return self.load_sync(thread_id)

    def save_sync(self, cp: Checkpoint, durable: bool = True) -> None:
        """``save``; ``durable`` means nothing here (nothing outlives the process)."""
        text = cp.to_json()  # serialise before taking the lock: a bad value changes nothing
        with self._lock:
            chain = self._threads.setdefault(cp.thread_id, [])
            latest = chain[-1] if chain else None
            if cp.parent_id != latest or cp.id in self._by_id:
                raise CheckpointConflict(cp.thread_id, cp.parent_id, latest)
            chain.append(cp.id)
            self._by_id[cp.id] = text
            self._runs[cp.run_id] = cp.id

    def load_sync(self, thread_id: str) -> Checkpoint | None:
        chain = self._threads.get(thread_id)
        return Checkpoint.from_json(self._by_id[chain[-1]]) if chain else None

    def recent_sync(self, thread_id: str) -> Checkpoint | None:
        """Nothing to guess: ``load_sync`` is as cheap as a memory of it would be."""
        return None

    async def load_by_id(self, checkpoint_id: str) -> Checkpoint | None:
        return self._decoded(checkpoint_id)

    async def list(self, thread_id: str) -> list[Checkpoint]:
        return [Checkpoint.from_json(self._by_id[i]) for i in self._threads.get(thread_id, [])]

    async def delete(self, thread_id: str) -> None:
        with self._lock:
            for checkpoint_id in self._threads.pop(thread_id, []):
                self._by_id.pop(checkpoint_id, None)
            self._runs = {r: c for r, c in self._runs.items() if c in self._by_id}

    async def load_run(self, run_id: str) -> Checkpoint | None:
        return self.load_run_sync(run_id)

    def load_run_sync(self, run_id: str) -> Checkpoint | None:
        return self._decoded(self._runs.get(run_id))

    def _decoded(self, checkpoint_id: str | None) -> Checkpoint | None:
        text = self._by_id.get(checkpoint_id) if checkpoint_id else None
        return Checkpoint.from_json(text) if text is not None else None
