"""``DjangoCheckpointStore`` against the runtime's store conformance suite, on both databases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forgeui.store import DjangoCheckpointStore
from tests.runtime.store_conformance import StoreConformance


class TestDjangoStoreOnSQLite(StoreConformance):
    pytestmark = pytest.mark.django_db(transaction=True, databases=["sqlite"])

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore("sqlite")


class TestDjangoStoreOnPostgres(StoreConformance):
    pytestmark = [
        pytest.mark.postgres,
        pytest.mark.django_db(transaction=True, databases=["postgres"]),
    ]

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore("postgres")
