"""``StoreThreadMemoryStore``: the in-memory store as a ``BlockingStore``.

Its blocking twins run on one thread of its own, as the Django store's run on its
database thread, so the runtime tests can drive every graph both ways: steps on the event
loop, and chains of lone sync steps on the store's thread (``drive_on_store_thread``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import ClassVar, TypeVar

from runtime import InMemoryCheckpointStore, _records
from runtime.checkpoint import Checkpoint

T = TypeVar("T")
STORE_THREAD = "memory-store"


class StoreThreadMemoryStore(InMemoryCheckpointStore):
    """Counts its trips to the store thread (``trips``) and its reads (``loads``), and
    remembers what it saved last per thread (``recent_sync``), as the Django store does.
    ``blocks_here``: sync callers may call the blocking twins on their own thread.

    Saves with ``durable=False`` are listed in ``unwaited`` (checkpoint ids);
    ``behind_disk`` holds while the latest save of all was one of them, as a database
    would be behind its disk until its next durable commit. Every store made during a
    test is in ``made``, so the runtime tests can check none is left behind.
    """

    made: ClassVar[list[StoreThreadMemoryStore]] = []

    def __init__(self, blocks_here: bool = True) -> None:
        super().__init__()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=STORE_THREAD)
        self.trips = self.loads = 0
        self.recent: dict[str, str] = {}
        self.blocks_here = blocks_here
        self.unwaited: list[str] = []
        self.behind_disk = False
        self.made.append(self)

    def can_block_here(self) -> bool:
        return self.blocks_here

    def save_sync(self, cp: Checkpoint, durable: bool = True) -> None:
        super().save_sync(cp, durable)
        assert cp._base is not None  # the head this save wrote, whole
        self.recent[cp.thread_id] = cp._base[1]
        if not durable:
            self.unwaited.append(cp.id)
        self.behind_disk = not durable

    def load_sync(self, thread_id: str) -> Checkpoint | None:
        self.loads += 1
        return super().load_sync(thread_id)

    def recent_sync(self, thread_id: str) -> Checkpoint | None:
        text = self.recent.get(thread_id)
        if text is None:
            return None
        checkpoint_id = json.loads(text)["id"]
        return _records.loaded(text, checkpoint_id, partial(self._growing, checkpoint_id))

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        self.trips += 1
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn)
