"""Every runtime test that builds its own in-memory store runs twice: with the plain store
(steps on the event loop) and with ``StoreThreadMemoryStore`` (lone sync steps on the
store's thread). Both must behave the same; only the thread the nodes run on differs."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from runtime import DurableExecutor
from tests.runtime.store_thread import StoreThreadMemoryStore

KINDS = ("memory", "store-thread")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_kind" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_STORES", True):
        metafunc.parametrize("store_kind", KINDS, indirect=True)


@pytest.fixture(autouse=True)
def store_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
               ) -> Iterator[str]:
    kind = getattr(request, "param", "memory")  # hypothesis' TestCase: not parametrized
    if kind == "store-thread":
        for name, module in list(sys.modules.items()):
            if (name == "runtime.executor" or name.startswith("tests.runtime.")) and \
                    getattr(module, "InMemoryCheckpointStore", None) is not None and \
                    name != "tests.runtime.store_thread":
                monkeypatch.setattr(module, "InMemoryCheckpointStore", StoreThreadMemoryStore)
        # Else this variant would quietly repeat the plain one.
        assert isinstance(DurableExecutor([("a", lambda data: data)]).store,
                          StoreThreadMemoryStore)
    StoreThreadMemoryStore.made.clear()
    yield kind
    StoreThreadMemoryStore.made.clear()
