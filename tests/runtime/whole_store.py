"""``WholeCopyStore``: the plainest ``CheckpointStore``, whole checkpoints as JSON text.

It implements the protocol and nothing more (no store kit, no heads), as a third party's
store might; the executor adapts it (``runtime._whole_stores``). The runtime tests run on
it too, so going on from heads never depends on the kit.
"""

from __future__ import annotations

import threading

from runtime import Checkpoint, CheckpointConflict


class WholeCopyStore:
    def __init__(self) -> None:
        self._threads: dict[str, list[str]] = {}  # thread -> checkpoint ids, oldest first
        self._texts: dict[str, tuple[str, str]] = {}  # checkpoint id -> thread, JSON
        self._runs: dict[str, str] = {}  # run id -> latest checkpoint id
        self._lock = threading.Lock()

    async def save(self, cp: Checkpoint) -> None:
        text = cp.to_json()  # first: a value that is not JSON changes nothing
        with self._lock:
            chain = self._threads.setdefault(cp.thread_id, [])
            latest = chain[-1] if chain else None
            if cp.parent_id != latest or cp.id in self._texts:
                raise CheckpointConflict(cp.thread_id, cp.parent_id, latest)
            chain.append(cp.id)
            self._texts[cp.id] = (cp.thread_id, text)
            self._runs[cp.run_id] = cp.id

    async def load(self, thread_id: str) -> Checkpoint | None:
        chain = self._threads.get(thread_id)
        return await self.load_by_id(chain[-1]) if chain else None

    async def load_by_id(self, checkpoint_id: str) -> Checkpoint | None:
        found = self._texts.get(checkpoint_id)
        if found is None or found[0] not in self._threads:
            return None
        return Checkpoint.from_json(found[1])

    async def list(self, thread_id: str) -> list[Checkpoint]:
        return [Checkpoint.from_json(self._texts[i][1]) for i in self._threads.get(thread_id, [])]

    async def delete(self, thread_id: str) -> None:
        with self._lock:
            for checkpoint_id in self._threads.pop(thread_id, []):
                del self._texts[checkpoint_id]
            self._runs = {r: c for r, c in self._runs.items() if c in self._texts}

    async def load_run(self, run_id: str) -> Checkpoint | None:
        checkpoint_id = self._runs.get(run_id)
        return None if checkpoint_id is None else await self.load_by_id(checkpoint_id)
