"""Small shared pieces for the runtime tests: call counters and checkpoint readers."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from runtime import Checkpoint, CheckpointStore, RunResult


class Calls:
    """Counts node invocations; sync nodes run in worker threads, hence the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, Any]] = []

    def hit(self, name: str, detail: Any = None) -> None:
        with self._lock:
            self.counts[name] += 1
            self.log.append((name, detail))

    def __getitem__(self, name: str) -> int:
        return self.counts[name]


def _present(store: CheckpointStore | None) -> CheckpointStore:
    assert store is not None, "this test needs an executor with a store"
    return store


async def checkpoints(store: CheckpointStore | None, thread_id: str) -> list[Checkpoint]:
    """Every checkpoint of a thread, oldest first."""
    return await _present(store).list(thread_id)


async def checkpoint_ids(store: CheckpointStore | None, thread_id: str) -> list[str]:
    return [cp.id for cp in await checkpoints(store, thread_id)]


async def latest(store: CheckpointStore | None, thread_id: str) -> Checkpoint:
    cp = await _present(store).load(thread_id)
    assert cp is not None, f"thread {thread_id!r} has no checkpoint"
    return cp


async def run_checkpoint(store: CheckpointStore | None, run_id: str) -> Checkpoint:
    """The latest checkpoint of one run (a sub-agent's, say), wherever its thread is."""
    cp = await _present(store).load_run(run_id)
    assert cp is not None, f"run {run_id!r} has no checkpoint"
    return cp


def pending_by_node(result: RunResult) -> dict[str, Any]:
    """The result's pending interrupts keyed by node name (nodes are unique in a test)."""
    return {i.node: i for i in result.interrupts}


LATEST_KEYS = {"thread_id", "run_id", "checkpoint_id", "status", "interrupts"}
