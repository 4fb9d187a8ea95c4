"""The in-memory store against the shared conformance suite."""

import pytest

from runtime import InMemoryCheckpointStore

from .store_conformance import StoreConformance


class TestInMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self) -> InMemoryCheckpointStore:
        return InMemoryCheckpointStore()
