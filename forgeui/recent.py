"""What this process last saved of each thread: a guess that spares a resume its read.

A run paused by this process is usually resumed by it too (in-process tasks, the same
worker), and the first thing a resume does is read the thread's latest checkpoint to
record the answer on it. The store hands the runtime this copy instead
(``BlockingStore.recent_sync``); the save's compare-and-set then proves it was still the
latest, or fails and the runtime reads the database after all. So a stale entry costs a
retry, never a wrong answer; entries are dropped when a save of the thread is lost or
made where this process cannot know it will commit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict


class RecentCheckpoints:
    """Checkpoint JSON by (database alias, thread id), least recently saved out first,
    within ``size`` threads and ``budget`` characters in all."""

    def __init__(self, size: int = 1024, budget: int = 32 * 2**20) -> None:
        self.size, self.budget, self.used = size, budget, 0
        self.entries: OrderedDict[tuple[str, str], str] = OrderedDict()
        self.lock = threading.Lock()

    def put(self, using: str, thread_id: str, text: str) -> None:
        with self.lock:
            self._drop((using, thread_id))
            if len(text) > self.budget // 8:
                return  # one huge state would push out everything else
            self.entries[(using, thread_id)] = text
            self.used += len(text)
            while len(self.entries) > self.size or self.used > self.budget:
                _, old = self.entries.popitem(last=False)
                self.used -= len(old)

    def get(self, using: str, thread_id: str) -> str | None:
        with self.lock:
            return self.entries.get((using, thread_id))

    def forget(self, using: str, thread_id: str) -> None:
        with self.lock:
            self._drop((using, thread_id))

    def _drop(self, key: tuple[str, str]) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.used -= len(old)


recent_checkpoints = RecentCheckpoints()
