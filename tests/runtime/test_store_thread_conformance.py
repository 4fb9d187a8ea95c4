"""The runtime tests' blocking store against the blocking twins' conformance suite."""

from collections.abc import Iterator

import pytest

from .store_conformance import BlockingStoreConformance, StoreConformance
from .store_thread import StoreThreadMemoryStore


class TestStoreThreadMemoryStore(StoreConformance, BlockingStoreConformance):
    @pytest.fixture
    def store(self) -> Iterator[StoreThreadMemoryStore]:
        yield StoreThreadMemoryStore()
