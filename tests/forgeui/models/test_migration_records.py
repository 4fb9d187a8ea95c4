"""Migrations from 0013 on: a database of whole-copy checkpoints, as the previous schema
kept them, becomes step records and heads that load equal in value and go on running."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from forgeui.store import DjangoCheckpointStore
from runtime import InMemoryCheckpointStore
from tests.runtime.store_conformance import chat_graph, expected_messages, talk

BEFORE = [("forgeui", "0012_checkpoints_found_by_run_through_the_run_row")]
# Head fields the previous store did not have: a checkpoint it saved has none.
NEWER = {"outputs": None, "routes": None}


def migrate(alias: str, target: list[tuple[str, str]]) -> Any:
    """Move ``alias`` to ``target``; the app registry of that state."""
    executor = MigrationExecutor(connections[alias])
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def whole_copies() -> dict[str, list[dict[str, Any]]]:
    """Threads as the previous store saved them: every checkpoint whole (``to_dict``)."""
    async def make() -> dict[str, list[dict[str, Any]]]:
        store = InMemoryCheckpointStore()
        executor = chat_graph(store)
        original = await talk(executor, 12)
        fork = await executor.fork(original)
        await talk(executor, 2, fork)
        return {t: [{**cp.to_dict(), **NEWER} for cp in await store.list(t)]
                for t in (original, fork)}
    return asyncio.run(make())


@pytest.fixture
def old_schema(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    alias = request.param
    apps = migrate(alias, BEFORE)
    try:
        yield alias, apps
    finally:
        migrate(alias, [("forgeui", _latest(alias))])


def _latest(alias: str) -> str:
    executor = MigrationExecutor(connections[alias])
    return max(name for app, name in executor.loader.graph.leaf_nodes() if app == "forgeui")


@pytest.mark.django_db(transaction=True, databases=["sqlite", "postgres"])
@pytest.mark.parametrize("old_schema", ["sqlite", pytest.param("postgres",
                                                               marks=pytest.mark.postgres)],
                         indirect=True)
def test_whole_copies_become_records_that_load_equal_and_go_on(
        old_schema: tuple[str, Any]) -> None:
    alias, apps = old_schema
    threads = whole_copies()
    thread_model = apps.get_model("forgeui", "Thread")
    checkpoint_model = apps.get_model("forgeui", "Checkpoint")
    for thread, docs in threads.items():
        thread_model.objects.using(alias).create(
            thread_id=thread, latest_checkpoint_id=docs[-1]["id"], seq=len(docs))
        checkpoint_model.objects.using(alias).bulk_create([checkpoint_model(
            id=doc["id"], thread_id=thread, seq=seq, run_id=doc["run_id"],
            parent_id=doc["parent_id"] or "", node=doc["node"] or "", status=doc["status"],
            step=doc["step"], created_at=datetime.fromtimestamp(doc["created_at"] / 1000, UTC),
            data=doc) for seq, doc in enumerate(docs, start=1)])
    whole = sum(len(str(doc)) for docs in threads.values() for doc in docs)

    migrate(alias, [("forgeui", _latest(alias))])

    store = DjangoCheckpointStore(alias)
    for thread, docs in threads.items():
        assert [cp.to_dict() for cp in store.list_sync(thread)] == docs
        latest = store.load_sync(thread)
        assert latest is not None and latest.to_dict() == docs[-1]
    rows = connections[alias].cursor()
    rows.execute("SELECT SUM(LENGTH(record)) FROM forgeui_checkpoint")
    assert rows.fetchone()[0] < whole / 3  # what each step added, not copies

    original = next(iter(threads))
    executor = chat_graph(store)
    done = executor.resume_sync(original, "after the migration")
    assert done.status == "interrupted"
    cp = store.load_sync(original)
    assert cp is not None
    assert cp.pending_input["messages"] == [*expected_messages(12),
                                            {"role": "user", "content": "after the migration"}]
