"""``FullCopyReference``: the record store beside the simplest model of what it must return.

Alongside every save it keeps the checkpoint whole, as a store of full copies would: its
head as the executor had it, and its history, state and resolved built by plain list and
dict operations from its base's (or, for a checkpoint built by hand, as given). Tests
compare what the record store rebuilds from patches and step records against these.
"""

from __future__ import annotations

import json
from typing import Any

from runtime import InMemoryCheckpointStore
from runtime.checkpoint import FIELD_NAMES, GROWING, Checkpoint, Draft


class FullCopyReference(InMemoryCheckpointStore):
    def __init__(self) -> None:
        super().__init__()
        self.full: dict[str, dict[str, Any]] = {}
        self.order: dict[str, list[str]] = {}

    def save_head_sync(self, draft: Draft) -> None:
        """Every save a run makes (the async ``save_head`` comes here too)."""
        expected = self._expected(draft)  # before the save consumes what the executor added
        super().save_head_sync(draft)
        self._keep(draft.id, draft.thread_id, expected)

    def save_sync(self, cp: Checkpoint) -> None:
        expected = self._expected(cp)
        super().save_sync(cp)
        self._keep(cp.id, cp.thread_id, expected)

    def _keep(self, checkpoint_id: str, thread_id: str, expected: dict[str, Any]) -> None:
        self.full[checkpoint_id] = json.loads(json.dumps(expected))
        self.order.setdefault(thread_id, []).append(checkpoint_id)

    async def delete(self, thread_id: str) -> None:
        await super().delete(thread_id)
        self.order.pop(thread_id, None)

    def _expected(self, cp: Checkpoint | Draft) -> dict[str, Any]:
        head = {name: cp.stored(name) for name in FIELD_NAMES if name not in GROWING}
        if not isinstance(cp, Draft):
            return {**head, "history": cp.history, "state": cp.state, "resolved": cp.resolved}
        added = cp.additions
        base = cp.parent_id or (cp.saved.id if cp.saved is not None else None)
        empty: dict[str, Any] = {"history": [], "state": {}, "resolved": []}
        prev = empty if added.reset or base is None else self.full[base]
        history = prev["history"] + [{k: v for k, v in e.items() if k != "task_id"}
                                     for e in added.history]
        state = dict(prev["state"])
        for entry in added.history:
            if not entry.get("cancelled"):
                state[entry["node"]] = entry["output"]
        return {**head, "history": history, "state": state,
                "resolved": prev["resolved"] + added.resolved}

    async def assert_rebuilds_every_checkpoint(self) -> None:
        """``list``, ``load_by_id`` and ``load`` equal the full copies, thread by thread."""
        assert self.order, "no save reached the reference: it would compare nothing"
        for thread, ids in self.order.items():
            listed = [cp.to_dict() for cp in await self.list(thread)]
            assert listed == [self.full[i] for i in ids], thread
            latest = await self.load(thread)
            assert latest is not None and latest.to_dict() == self.full[ids[-1]], thread
            for checkpoint_id in ids:
                one = await self.load_by_id(checkpoint_id)
                assert one is not None and one.to_dict() == self.full[checkpoint_id]
