"""``DjangoCheckpointStore`` against the runtime's store conformance suite, on both databases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async

from forgeui.models import Checkpoint, Thread
from forgeui.store import DjangoCheckpointStore
from tests.runtime.store_conformance import (
    BlockingStoreConformance,
    InPlaceConformance,
    LongThreadConformance,
    StoreConformance,
)


class DjangoStoredBytes(LongThreadConformance, InPlaceConformance):
    async def stored_bytes(self, store: DjangoCheckpointStore, thread_id: str) -> int:
        return await sync_to_async(_stored_bytes)(store.using, thread_id)


def _stored_bytes(using: str, thread_id: str) -> int:
    records = Checkpoint.objects.using(using).filter(thread_id=thread_id)
    heads = Thread.objects.using(using).filter(pk=thread_id)
    return (sum(len(r) for r in records.values_list("record", flat=True))
            + sum(len(h) for h in heads.values_list("head", flat=True)))


class TestDjangoStoreOnSQLite(StoreConformance, BlockingStoreConformance, DjangoStoredBytes):
    pytestmark = pytest.mark.django_db(transaction=True, databases=["sqlite"])

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore("sqlite")


class TestDjangoStoreOnPostgres(StoreConformance, BlockingStoreConformance,
                                DjangoStoredBytes):
    pytestmark = [
        pytest.mark.postgres,
        pytest.mark.django_db(transaction=True, databases=["postgres"]),
    ]

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore("postgres")
