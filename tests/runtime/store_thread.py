"""``StoreThreadMemoryStore``: the in-memory store as a ``BlockingStore``.

Its blocking twins run on one thread of its own, as the Django store's run on its
database thread, so the runtime tests can drive every graph both ways: steps on the event
loop, and chains of lone sync steps on the store's thread (``drive_on_store_thread``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from runtime import InMemoryCheckpointStore
from runtime.checkpoint import Draft

T = TypeVar("T")
STORE_THREAD = "memory-store"


class StoreThreadMemoryStore(InMemoryCheckpointStore):
    """Counts its trips to the store thread (``trips``) and its reads (``loads``).
    ``blocks_here``: sync callers may call the blocking twins on their own thread."""

    def __init__(self, blocks_here: bool = True) -> None:
        super().__init__()
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=STORE_THREAD)
        self.trips = self.loads = 0
        self.blocks_here = blocks_here

    def can_block_here(self) -> bool:
        return self.blocks_here

    def load_head_sync(self, thread_id: str) -> Draft | None:
        self.loads += 1
        return super().load_head_sync(thread_id)

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        self.trips += 1
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn)
