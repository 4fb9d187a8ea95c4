"""The in-memory store against the shared conformance suite."""

import pytest

from runtime import InMemoryCheckpointStore

from .store_conformance import InPlaceConformance, LongThreadConformance, StoreConformance

# The record store's own tests: on the two stores built on the store kit.
STORE_KINDS = ("memory", "store-thread")


class TestInMemoryStore(StoreConformance, LongThreadConformance, InPlaceConformance):
    @pytest.fixture
    def store(self) -> InMemoryCheckpointStore:
        return InMemoryCheckpointStore()

    async def stored_bytes(self, store: InMemoryCheckpointStore, thread_id: str) -> int:
        chain = store._threads.get(thread_id, [])
        return (sum(len(store._records[i][2]) for i in chain)
                + len(store._heads.get(thread_id, "")))
