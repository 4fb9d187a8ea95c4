"""``RowsStore``: a checkpoint store written against the public store kit alone.

What a third party would write: rows in plain lists, the six primitives of
``runtime.RecordStore``, and nothing from a module whose name starts with ``_``. It keeps
a head at every save and reads no records after it, the simplest policy the kit allows.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from runtime import Checkpoint, CheckpointConflict, Lineage, RecordStore, Step, StoredHead


@dataclass
class Row:
    checkpoint_id: str
    thread_id: str
    run_id: str
    base_id: str | None
    record: str


class RowsStore(RecordStore):
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.heads: dict[str, str | None] = {}  # thread -> its latest head (None: none)
        self.lock = threading.Lock()

    def append(self, cp: Checkpoint, step: Step) -> None:
        with self.lock:
            own = self._thread_rows(cp.thread_id)
            latest = own[-1].checkpoint_id if own else None
            if cp.parent_id != latest or any(r.checkpoint_id == cp.id for r in self.rows):
                raise CheckpointConflict(cp.thread_id, cp.parent_id, latest)
            self.rows.append(Row(cp.id, cp.thread_id, cp.run_id, step.base_id, step.record))
            self.heads[cp.thread_id] = step.head if step.keeps_head else None

    def read_head(self, thread_id: str) -> StoredHead | None:
        own = self._thread_rows(thread_id)
        if not own:
            return None
        return StoredHead(own[-1].checkpoint_id, len(own), self.heads[thread_id])

    def read_lineage(self, checkpoint_id: str, visible_only: bool) -> Lineage | None:
        found = next((r for r in self.rows if r.checkpoint_id == checkpoint_id), None)
        if found is None or (visible_only and found.thread_id not in self.heads):
            return None
        own = self._thread_rows(found.thread_id)
        return self._lineage(own[:own.index(found) + 1])

    def read_thread(self, thread_id: str, stop: int | None = None) -> Lineage | None:
        if thread_id not in self.heads:
            return None
        return self._lineage(self._thread_rows(thread_id)[:stop])

    def run_latest(self, run_id: str) -> tuple[str, str] | None:
        found = [r for r in self.rows if r.run_id == run_id and r.thread_id in self.heads]
        return (found[-1].thread_id, found[-1].checkpoint_id) if found else None

    def delete_thread(self, thread_id: str) -> None:
        # The rows stay, under a name no thread has, for the forks built on them.
        with self.lock:
            if self.heads.pop(thread_id, "") == "":
                return
            for row in self._thread_rows(thread_id):
                row.thread_id = f"{thread_id}#deleted-{id(self)}-{len(self.rows)}"

    def _thread_rows(self, thread_id: str) -> list[Row]:
        return [r for r in self.rows if r.thread_id == thread_id]

    @staticmethod
    def _lineage(rows: list[Row]) -> Lineage:
        return Lineage([r.record for r in rows], rows[0].base_id if rows else None)
