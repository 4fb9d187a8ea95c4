"""Saving a run: each save a compare-and-set on its thread, merging what was recorded
under the tree's lease meanwhile; ``once`` results saved before a node sees them."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from . import _tree
from ._ids import new_id, now_ms
from ._run_state import RunState
from ._store_calls import LoadLatest, SaveNext, StoreDialogue, converse, converse_blocking
from .checkpoint import Draft
from .errors import CheckpointConflict, ForgeError, ResumeError
from .types import RunStatus

T = TypeVar("T")
_SIDE_LOOP = ThreadPoolExecutor(max_workers=4, thread_name_prefix="forge-once")


class RunSaving(RunState):
    """``save`` and what it needs: stamping, merging, and ``once`` records."""

    async def record_once(self, key: str, result: Any) -> None:
        self.cp.once[key] = result
        await self.save("running")

    def record_once_blocking(self, key: str, result: Any) -> None:
        """``record_once`` for a sync node, in whichever thread it runs: saved on return."""
        if self.mode == "store-thread":
            self.cp.once[key] = result
            self._save_here("running")
            return
        self.run_blocking(self.record_once(key, result))

    def check_can_block(self) -> None:
        """Refuse a sync ``once`` from an async node before it calls anything."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return
        if running is self.tree.loop and self.mode != "inline":
            raise ForgeError("ctx.once is for sync nodes; async nodes use await ctx.once_async")

    def run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Finish ``coro`` from a sync node, which runs in a worker thread or inline."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # A worker thread of the tree's loop: the loop exists (``drive`` set it).
            assert self.tree.loop is not None
            return asyncio.run_coroutine_threadsafe(coro, self.tree.loop).result()
        # An inline sync node blocks the tree's loop, so nothing else of this run moves:
        # saving on a side loop is safe, and the save is done before once() returns.
        return _SIDE_LOOP.submit(asyncio.run, coro).result()

    async def save(self, status: RunStatus) -> bool:
        """Persist the run; False when answers merged meanwhile mean it must go on."""
        self._mark(status)
        store = self.tree.store
        if store is None:
            if status == "interrupted":
                raise ResumeError("interrupts require a checkpoint store and a thread id")
            self.dirty = False
            return True
        async with self._lock:
            return await converse(store, self._saving(status))

    def _save_here(self, status: RunStatus) -> bool:
        """``save`` with the blocking twins, on the store's thread (the tree's other
        coroutines are idle: ``_fits_store_thread``)."""
        assert self._blocking is not None
        self._mark(status)
        return converse_blocking(self._blocking, self._saving(status))

    def _mark(self, status: RunStatus) -> None:
        self.cp.status = status
        self.cp.engine.lease = self.tree.lease if status == "running" else None

    def _saving(self, status: RunStatus) -> StoreDialogue[bool]:
        """The save, as store calls: on a conflict the root takes in what was recorded
        meanwhile under its lease and tries again (or goes on, when that is new work)."""
        while True:
            self._stamp()
            try:
                yield SaveNext(self.cp)
            except CheckpointConflict:
                if not self.is_root or not self._merge((yield LoadLatest(self.cp.thread_id))):
                    raise
                if self._goes_on(status):
                    return False
                continue
            self._saved()
            return True

    def _goes_on(self, status: RunStatus) -> bool:
        """After a merge: answers for a run about to pause mean it must go on instead."""
        if status == "interrupted" and self._has_new_work():
            self.cp.status, self.cp.engine.lease = "running", self.tree.lease
            return True
        return False

    def _saved(self) -> None:
        self.base = self.cp.id
        self.dirty = False

    def _stamp(self) -> None:
        cp = self.cp
        cp.id, cp.parent_id, cp.created_at = new_id(), self.base, now_ms()
        for record in cp.interrupts:
            record["checkpoint_id"] = cp.id
        waiting = next((t for t in cp.engine.tasks if t["status"] == "interrupted"), None)
        cp.pending_input = waiting["input"] if waiting else None
        if self.is_root:
            open_ids = {i["id"] for i in _tree.pending(cp)}
            cp.engine.answers = {k: v for k, v in self.tree.inbox.items() if k in open_ids}
            cp.engine.cancels = sorted(self.tree.cancels)
            cp.steering = list(self.tree.steering)
        else:
            cp.steering = self.steering_for_run()
        first = _tree.pending(cp)[:1] if self.is_root else cp.interrupts[:1]
        cp.interrupt_payload = first[0]["payload"] if first else None
        last = cp.last_completed
        cp.node = (cp.interrupts[0]["node"] if cp.interrupts
                   else last["node"] if last else None)

    def _merge(self, latest: Draft | None) -> bool:
        """Take in answers, cancels and notes recorded while we held the lease."""
        if latest is None or latest.engine.lease != self.tree.lease:
            return False
        for iid, entry in latest.engine.answers.items():
            if iid not in self.tree.consumed:
                self.tree.inbox.setdefault(iid, entry)
        self.tree.cancels.update(latest.engine.cancels)
        known = {n["id"] for n in self.tree.steering}
        self.tree.steering.extend(n for n in latest.steering if n["id"] not in known)
        self.base = latest.id
        return True

    def _has_new_work(self) -> bool:
        open_ids = {i["id"] for i in _tree.pending(self.cp)}
        return bool(open_ids & self.tree.unapplied().keys()) \
            or self.cp.run_id in self.tree.cancels \
            or any(rid in self.tree.cancels for rid in self.cp.engine.children)
