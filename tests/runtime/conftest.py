"""The runtime tests' stores. A test that takes ``store`` (a new, empty store) runs three
times: on the plain in-memory store (steps on the event loop), on
``StoreThreadMemoryStore`` (lone sync steps on the store's thread) and on
``WholeCopyStore`` (a store of whole checkpoints that knows only the ``CheckpointStore``
protocol). All three must behave the same. A module may run its tests on fewer kinds
(``STORE_KINDS``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runtime import CheckpointStore, InMemoryCheckpointStore
from tests.runtime.store_thread import StoreThreadMemoryStore
from tests.runtime.whole_store import WholeCopyStore

KINDS = ("memory", "store-thread", "whole")
STORES: dict[str, Callable[[], CheckpointStore]] = {
    "memory": InMemoryCheckpointStore,
    "store-thread": StoreThreadMemoryStore,
    "whole": WholeCopyStore,
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" in metafunc.fixturenames:
        metafunc.parametrize("store_kind", getattr(metafunc.module, "STORE_KINDS", KINDS),
                             indirect=True)


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which store this run of the test is on: one of ``KINDS``."""
    return str(request.param)


@pytest.fixture
def new_store(store_kind: str) -> Callable[[], CheckpointStore]:
    """Makes new, empty stores of this run's kind (for a test that needs several)."""
    return STORES[store_kind]


@pytest.fixture
def store(new_store: Callable[[], CheckpointStore]) -> CheckpointStore:
    """A new, empty store of this run's kind, for the executor under test."""
    return new_store()
