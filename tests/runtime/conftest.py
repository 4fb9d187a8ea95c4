"""Every runtime test that builds its own in-memory store runs three times: with the plain
store (steps on the event loop), with ``StoreThreadMemoryStore`` (lone sync steps on the
store's thread) and with ``WholeCopyStore`` (a store of whole checkpoints that knows only
the ``CheckpointStore`` protocol). All must behave the same."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from runtime import DurableExecutor
from tests.runtime.store_thread import StoreThreadMemoryStore
from tests.runtime.whole_store import WholeCopyStore

KINDS = ("memory", "store-thread", "whole")
STORES = {"store-thread": StoreThreadMemoryStore, "whole": WholeCopyStore}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module may run on fewer kinds: ``STORE_KINDS`` (the record store's own tests run
    on the two built on the store kit), or none (``BOTH_STORES = False``)."""
    if "store_kind" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_STORES", True):
        metafunc.parametrize("store_kind", getattr(metafunc.module, "STORE_KINDS", KINDS),
                             indirect=True)


@pytest.fixture(autouse=True)
def store_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
               ) -> Iterator[str]:
    kind = getattr(request, "param", "memory")  # hypothesis' TestCase: not parametrized
    if kind in STORES:
        for name, module in list(sys.modules.items()):
            if (name == "runtime.executor" or name.startswith("tests.runtime.")) and \
                    getattr(module, "InMemoryCheckpointStore", None) is not None and \
                    name != "tests.runtime.store_thread":
                monkeypatch.setattr(module, "InMemoryCheckpointStore", STORES[kind])
        # Else this variant would quietly repeat the plain one.
        assert isinstance(DurableExecutor([("a", lambda data: data)]).store, STORES[kind])
    StoreThreadMemoryStore.made.clear()
    yield kind
    StoreThreadMemoryStore.made.clear()
