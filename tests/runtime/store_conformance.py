"""The conformance suite every ``CheckpointStore`` backend must pass.

Mix ``StoreConformance`` into a test class that provides a ``store`` fixture (a fresh,
empty store per test); ``tests/runtime/test_memory_store.py`` is the smallest example.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from runtime import Checkpoint, CheckpointConflict, CheckpointStore
from runtime.checkpoint import update_latest


def make_checkpoint(thread_id: str, parent_id: str | None, **changes: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "thread_id": thread_id,
        "node": "ask",
        "interrupt_payload": {"question": "Approve?"},
        "state": {"prepare": {"amount": 5, "note": "ünïcode ✓"}},
        "history": [{"node": "prepare", "output": {"amount": 5, "note": "ünïcode ✓"}}],
        "pending_input": {"amount": 5},
        "created_at": 1_700_000_000_123,
        "run_id": "run-" + thread_id,
        "parent_id": parent_id,
        "namespace": ["transfer"],
        "status": "interrupted",
        "interrupts": [{"id": "i1", "payload": {"nested": [1, 2.5, None, True, "x"]}}],
    }
    fields.update(changes)
    return Checkpoint(**fields)


async def save_chain(store: CheckpointStore, thread_id: str, length: int) -> list[Checkpoint]:
    chain: list[Checkpoint] = []
    for _ in range(length):
        cp = make_checkpoint(thread_id, chain[-1].id if chain else None)
        await store.save(cp)
        chain.append(cp)
    return chain


class StoreConformance:
    """Behaviour shared by every checkpoint store (SPEC §1.7)."""

    async def test_is_a_checkpoint_store(self, store: CheckpointStore) -> None:
        assert isinstance(store, CheckpointStore)

    async def test_round_trip_keeps_every_field(self, store: CheckpointStore) -> None:
        cp = make_checkpoint("t-round", None, answers={"i0": {"value": {"ok": True}}},
                             steering=[{"text": "be brief"}], once={"k": [1, "a"]},
                             metadata={"started_by": "ann"}, forked_from="elsewhere")
        await store.save(cp)
        loaded = await store.load("t-round")
        assert loaded == cp
        assert await store.load_by_id(cp.id) == cp

    async def test_unknown_thread_and_id_are_none(self, store: CheckpointStore) -> None:
        assert await store.load("nope") is None
        assert await store.load_by_id("nope") is None
        assert await store.list("nope") == []
        assert await store.load_run("nope") is None

    async def test_latest_and_list_oldest_first(self, store: CheckpointStore) -> None:
        chain = await save_chain(store, "t-list", 4)
        latest = await store.load("t-list")
        assert latest is not None and latest.id == chain[-1].id
        assert [cp.id for cp in await store.list("t-list")] == [cp.id for cp in chain]

    async def test_first_save_must_have_no_parent(self, store: CheckpointStore) -> None:
        with pytest.raises(CheckpointConflict):
            await store.save(make_checkpoint("t-first", "missing-parent"))
        assert await store.load("t-first") is None

    async def test_stale_parent_is_a_conflict(self, store: CheckpointStore) -> None:
        chain = await save_chain(store, "t-cas", 2)
        for stale_parent in (None, chain[0].id, "unknown"):
            with pytest.raises(CheckpointConflict):
                await store.save(make_checkpoint("t-cas", stale_parent))
        latest = await store.load("t-cas")
        assert latest is not None and latest.id == chain[-1].id

    async def test_concurrent_saves_on_one_parent_exactly_one_wins(
        self, store: CheckpointStore
    ) -> None:
        (base,) = await save_chain(store, "t-race", 1)
        rivals = [make_checkpoint("t-race", base.id) for _ in range(10)]
        outcomes = await asyncio.gather(*(store.save(cp) for cp in rivals),
                                        return_exceptions=True)
        assert sum(o is None for o in outcomes) == 1
        assert all(isinstance(o, CheckpointConflict) for o in outcomes if o is not None)
        assert len(await store.list("t-race")) == 2

    async def test_threads_are_independent(self, store: CheckpointStore) -> None:
        a = await save_chain(store, "t-a", 2)
        b = await save_chain(store, "t-b", 3)
        assert [cp.id for cp in await store.list("t-a")] == [cp.id for cp in a]
        assert [cp.id for cp in await store.list("t-b")] == [cp.id for cp in b]

    async def test_loaded_checkpoints_are_copies(self, store: CheckpointStore) -> None:
        (cp,) = await save_chain(store, "t-copy", 1)
        cp.state["prepare"]["amount"] = 999
        loaded = await store.load("t-copy")
        assert loaded is not None
        loaded.history.append({"node": "x", "output": None})
        again = await store.load("t-copy")
        assert again is not None
        assert again.state["prepare"]["amount"] == 5
        assert len(again.history) == 1

    async def test_delete_forgets_the_thread_only(self, store: CheckpointStore) -> None:
        gone = await save_chain(store, "t-del", 2)
        kept = await save_chain(store, "t-keep", 1)
        await store.delete("t-del")
        assert await store.load("t-del") is None
        assert await store.load_by_id(gone[0].id) is None
        assert await store.list("t-del") == []
        assert await store.load("t-keep") == kept[0]
        await store.save(make_checkpoint("t-del", None))  # the thread can start again

    async def test_load_run_gives_the_runs_latest(self, store: CheckpointStore) -> None:
        first = make_checkpoint("t-run", None, run_id="r-1")
        second = make_checkpoint("t-run", first.id, run_id="r-1", status="completed")
        other = make_checkpoint("t-run", second.id, run_id="r-2")
        for cp in (first, second, other):
            await store.save(cp)
        assert await store.load_run("r-1") == second
        assert await store.load_run("r-2") == other

    async def test_update_latest_retries_a_lost_race_from_the_new_latest(
        self, store: CheckpointStore,
    ) -> None:
        chain = await save_chain(store, "t-upd", 2)
        seen: list[str | None] = []

        def change(latest: Checkpoint | None) -> Checkpoint:
            seen.append(latest.id if latest else None)
            # The first try is built on a checkpoint the thread has moved past.
            parent = chain[0].id if len(seen) == 1 else seen[-1]
            return make_checkpoint("t-upd", parent, status="completed")

        saved = await update_latest(store, "t-upd", change)
        assert seen == [chain[1].id, chain[1].id]
        assert saved.parent_id == chain[1].id and await store.load("t-upd") == saved

    async def test_update_latest_saves_nothing_when_the_change_refuses(
        self, store: CheckpointStore,
    ) -> None:
        chain = await save_chain(store, "t-refuse", 1)

        def change(latest: Checkpoint | None) -> Checkpoint:
            raise LookupError(f"no pending interrupt in {latest.id if latest else None}")

        with pytest.raises(LookupError, match=chain[0].id):
            await update_latest(store, "t-refuse", change)
        assert [cp.id for cp in await store.list("t-refuse")] == [chain[0].id]
        with pytest.raises(LookupError, match="None"):
            await update_latest(store, "t-unknown", change)
