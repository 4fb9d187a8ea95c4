"""A store built on the public store kit alone passes the conformance suite."""

import ast
from pathlib import Path

import pytest

from .kit_store import RowsStore
from .store_conformance import InPlaceConformance, LongThreadConformance, StoreConformance


class TestRowsStore(StoreConformance, LongThreadConformance, InPlaceConformance):
    @pytest.fixture
    def store(self) -> RowsStore:
        return RowsStore()

    async def stored_bytes(self, store: RowsStore, thread_id: str) -> int:
        return (sum(len(r.record) for r in store.rows if r.thread_id == thread_id)
                + len(store.heads.get(thread_id) or ""))


def test_the_kit_store_imports_only_public_names() -> None:
    tree = ast.parse(Path(__file__).with_name("kit_store.py").read_text())
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "runtime" in modules
    assert not [m for m in modules if m and m.startswith("runtime") and m != "runtime"]
