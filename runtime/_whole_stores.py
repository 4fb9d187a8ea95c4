"""Going on with runs on a store that keeps whole checkpoints (only ``CheckpointStore``).

The executor works on heads (``HeadStore``). A store built on the store kit speaks heads
itself; any other is adapted here: a head is a loaded checkpoint without its growing
fields, and a save is the whole checkpoint, its growing fields those of the checkpoint
it follows plus what the run added. Each save reads that checkpoint again, which such a
store pays for the plain protocol it chose.
"""

from __future__ import annotations

from typing import Any

from .checkpoint import (
    Additions,
    Checkpoint,
    CheckpointStore,
    Draft,
    Growing,
    HeadStore,
    implements,
)


def heads_of(store: CheckpointStore) -> HeadStore:
    """``store`` itself if it speaks heads, else ``store`` adapted."""
    if implements(store, HeadStore):
        return store  # type: ignore[return-value]
    return WholeCheckpoints(store)


def draft_of(cp: Checkpoint) -> Draft:
    """A checkpoint's head, ready to go on from."""
    return Draft(**cp.head_fields(), last_completed=last_completed(cp))


def last_completed(cp: Checkpoint) -> dict[str, Any] | None:
    """The task that completed last in ``cp``'s history, as the executor records it."""
    if not cp.history:
        return None
    last = cp.history[-1]
    done = next((t["id"] for t in reversed(cp.engine.tasks) if t["node"] == last["node"]), None)
    return {"node": last["node"], "task_id": done, "cancelled": bool(last.get("cancelled"))}


def grown(growing: Growing, additions: Additions) -> Growing:
    """``growing`` (history, state, resolved) with ``additions``, as new containers."""
    history, state, resolved = ([], {}, []) if additions.reset else growing
    history, state, resolved = list(history), dict(state), list(resolved)
    for entry in additions.history:
        history.append({k: v for k, v in entry.items() if k != "task_id"})
        if not entry.get("cancelled"):
            state[entry["node"]] = entry["output"]
    resolved.extend(additions.resolved)
    return history, state, resolved


class WholeCheckpoints:
    """``HeadStore`` on a store of whole checkpoints."""

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store

    async def load_head(self, thread_id: str) -> Draft | None:
        cp = await self.store.load(thread_id)
        return None if cp is None else draft_of(cp)

    async def load_head_by_id(self, checkpoint_id: str) -> Draft | None:
        cp = await self.store.load_by_id(checkpoint_id)
        return None if cp is None else draft_of(cp)

    async def load_run_head(self, run_id: str) -> Draft | None:
        cp = await self.store.load_run(run_id)
        return None if cp is None else draft_of(cp)

    async def save_head(self, draft: Draft) -> None:
        growing = await self._base_growing(draft)
        history, state, resolved = grown(growing, draft.additions)
        await self.store.save(Checkpoint(**draft.head_fields(), history=history, state=state,
                                         resolved=resolved))
        draft.additions = Additions()

    async def _base_growing(self, draft: Draft) -> Growing:
        """The growing fields of the checkpoint ``draft`` follows: its parent, or for a
        fork's first checkpoint the one it was copied from."""
        base = draft.parent_id or draft.forked_from
        if draft.additions.reset or base is None:
            return [], {}, []
        cp = await self.store.load_by_id(base)
        if cp is None:
            return [], {}, []
        return cp.history, cp.state, cp.resolved
