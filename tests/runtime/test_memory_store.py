"""The in-memory store against the shared conformance suite, and what a subclass of it
must override to act on every save."""

from typing import Any

import pytest

from runtime import Checkpoint, Draft, DurableExecutor, InMemoryCheckpointStore, NodeContext

from .store_conformance import InPlaceConformance, LongThreadConformance, StoreConformance

# The record store's own tests: on the two stores built on the store kit.
STORE_KINDS = ("memory", "store-thread")


class TestInMemoryStore(StoreConformance, LongThreadConformance, InPlaceConformance):
    """On ``store``: the in-memory store, and the one that works on its own thread."""

    async def stored_bytes(self, store: InMemoryCheckpointStore, thread_id: str) -> int:
        chain = store._threads.get(thread_id, [])
        return (sum(len(store._records[i][2]) for i in chain)
                + len(store._heads.get(thread_id, "")))


def test_a_subclass_overriding_only_save_is_refused_where_it_is_defined() -> None:
    """The executor saves through ``save_head``: an override of ``save`` alone would be
    left out of every save a run makes, so the class says so instead of being bypassed."""
    with pytest.raises(TypeError, match=r"overrides save, .* override save_head_sync"):
        class Audited(InMemoryCheckpointStore):
            async def save(self, cp: Checkpoint) -> None:
                await super().save(cp)
    with pytest.raises(TypeError, match="overrides save_sync"):
        class AuditedSync(InMemoryCheckpointStore):
            def save_sync(self, cp: Checkpoint) -> None:
                super().save_sync(cp)


async def test_a_subclass_overriding_save_head_sync_sees_every_save_of_a_run() -> None:
    class Counting(InMemoryCheckpointStore):
        def __init__(self) -> None:
            super().__init__()
            self.saved: list[str] = []

        async def save(self, cp: Checkpoint) -> None:  # allowed beside save_head
            await super().save(cp)

        def save_head_sync(self, draft: Draft) -> None:
            self.saved.append(draft.id)
            super().save_head_sync(draft)

    store = Counting()

    def ask(value: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt({"question": "ok?"})

    executor = DurableExecutor(nodes=[("ask", ask), ("done", lambda answer: answer)],
                               store=store)
    paused = await executor.run({}, thread_id="t-count")
    done = await executor.resume("t-count", "yes")
    assert paused.interrupted and done.output == "yes"
    assert store.saved == [cp.id for cp in await store.list("t-count")]
