"""The conformance suite every ``CheckpointStore`` backend must pass.

Mix ``StoreConformance`` into a test class that provides a ``store`` fixture (a fresh,
empty store per test); ``tests/runtime/test_memory_store.py`` is the smallest example.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import pytest

from runtime import (
    Checkpoint,
    CheckpointConflict,
    CheckpointStore,
    Draft,
    DurableExecutor,
    HeadStore,
)
from runtime._store_calls import update_latest
from runtime.checkpoint import Additions, BlockingStore


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
    return Checkpoint.from_dict(fields)


async def save_chain(store: CheckpointStore, thread_id: str, length: int) -> list[Checkpoint]:
    chain: list[Checkpoint] = []
    for _ in range(length):
        cp = make_checkpoint(thread_id, chain[-1].id if chain else None)
        await store.save(cp)
        chain.append(cp)
    return chain


class StoreConformance:
    """Behaviour shared by every checkpoint store."""

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

    async def test_what_a_store_returns_is_a_plain_value(self, store: CheckpointStore) -> None:
        """Every field of a checkpoint from ``load``, ``load_by_id``, ``list`` and
        ``load_run`` is built when it is returned: reading one calls no store (nor blocks an
        event loop), so it reads the same once the thread is gone."""
        thread = await talk(chat_graph(store), 3)
        latest = await store.load(thread)
        assert latest is not None
        found = [latest, await store.load_by_id(latest.id), (await store.list(thread))[-1],
                 await store.load_run(latest.run_id)]
        await store.delete(thread)
        for cp in found:
            assert cp is not None
            assert set(vars(cp)) == {f.name for f in dataclasses.fields(Checkpoint)}
            assert cp.state["ask"]["messages"] == expected_messages(3)
            assert [entry["node"] for entry in cp.history] == ["ask"] * 3
            assert [r["status"] for r in cp.resolved] == ["answered"] * 3

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

    async def test_load_run_head_gives_that_runs_head_not_the_threads_latest(
        self, store: CheckpointStore,
    ) -> None:
        """Two runs on one thread: the earlier run's head is its own last checkpoint."""
        first = make_checkpoint("t-runs", None, run_id="r-early")
        second = make_checkpoint("t-runs", first.id, run_id="r-early", status="completed")
        later = make_checkpoint("t-runs", second.id, run_id="r-later")
        for cp in (first, second, later):
            await store.save(cp)
        assert isinstance(store, HeadStore)
        early = await store.load_run_head("r-early")
        assert early is not None and (early.id, early.run_id, early.status) == (
            second.id, "r-early", "completed")
        latest = await store.load_run_head("r-later")
        assert latest is not None and (latest.id, latest.run_id) == (later.id, "r-later")
        assert await store.load_run_head("r-none") is None

    async def test_update_latest_retries_a_lost_race_from_the_new_latest(
        self, store: CheckpointStore,
    ) -> None:
        chain = await save_chain(store, "t-upd", 2)
        seen: list[str | None] = []

        def change(latest: Draft | None) -> Draft:
            seen.append(latest.id if latest else None)
            # The first try is built on a checkpoint the thread has moved past.
            parent = chain[0].id if len(seen) == 1 else seen[-1]
            made = make_checkpoint("t-upd", parent, status="completed")
            return Draft(**made.head_fields())

        assert isinstance(store, HeadStore)
        saved = await update_latest(store, "t-upd", change)
        assert seen == [chain[1].id, chain[1].id]
        head = await store.load_head("t-upd")
        assert saved.parent_id == chain[1].id
        assert head is not None and head.head_fields() == saved.head_fields()
        whole = await store.load("t-upd")
        assert whole is not None and whole.history == chain[1].history

    async def test_update_latest_saves_nothing_when_the_change_refuses(
        self, store: CheckpointStore,
    ) -> None:
        chain = await save_chain(store, "t-refuse", 1)

        def change(latest: Draft | None) -> Draft:
            raise LookupError(f"no pending interrupt in {latest.id if latest else None}")

        assert isinstance(store, HeadStore)
        with pytest.raises(LookupError, match=chain[0].id):
            await update_latest(store, "t-refuse", change)
        assert [cp.id for cp in await store.list("t-refuse")] == [chain[0].id]
        with pytest.raises(LookupError, match="None"):
            await update_latest(store, "t-unknown", change)


def chat(inp: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """One turn of a conversation: the answer appended to the messages carried along."""
    answer = ctx.interrupt({"question": "next?"})
    return {"messages": [*inp["messages"], {"role": "user", "content": answer}]}


def chat_graph(store: CheckpointStore) -> DurableExecutor:
    return DurableExecutor([("ask", chat)], edges={"ask": lambda out, ctx=None: "ask"},
                           store=store, name="chat")


async def talk(executor: DurableExecutor, turns: int, thread_id: str | None = None) -> str:
    result = (await executor.run({"messages": []}) if thread_id is None
              else await executor.get_state(thread_id))
    for turn in range(turns):
        result = await executor.resume(result.thread_id, f"message {turn:04d} " + "x" * 180)
    return result.thread_id


def expected_messages(turns: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"message {t:04d} " + "x" * 180} for t in range(turns)]


class LongThreadConformance:
    """Long threads: history built from step records, forks that share them.

    A backend test class provides ``store`` and ``stored_bytes(store, thread_id)``, what
    the backend keeps for the thread (records and head, in bytes).
    """

    async def stored_bytes(self, store: CheckpointStore, thread_id: str) -> int:
        raise AssertionError("a backend's test class says how much it stores")

    async def test_a_long_thread_keeps_its_whole_history(self, store: CheckpointStore) -> None:
        thread = await talk(chat_graph(store), 60)
        checkpoints = await store.list(thread)
        latest = await store.load(thread)
        assert latest is not None and latest.id == checkpoints[-1].id
        assert latest.pending_input == {"messages": expected_messages(60)}
        assert latest.state["ask"]["messages"] == expected_messages(60)
        assert [h["output"]["messages"] for h in latest.history] == [
            expected_messages(n) for n in range(1, 61)]
        assert len(latest.resolved) == 60
        for cp in checkpoints[::17]:  # any checkpoint, alone, equals its place in the list
            assert await store.load_by_id(cp.id) == cp

    async def test_storage_grows_linearly_with_turns(self, store: CheckpointStore) -> None:
        executor = chat_graph(store)
        short, long = await talk(executor, 30), await talk(executor, 120)
        ratio = await self.stored_bytes(store, long) / await self.stored_bytes(store, short)
        assert ratio < 4 * 1.25, ratio  # four times the turns, not sixteen

    async def test_a_fork_of_a_long_thread_shares_the_original(
        self, store: CheckpointStore,
    ) -> None:
        executor = chat_graph(store)
        original = await talk(executor, 80)
        before = await self.stored_bytes(store, original)
        fork = await executor.fork(original)
        assert await self.stored_bytes(store, fork) < 10_000
        assert await self.stored_bytes(store, original) == before
        await talk(executor, 1, fork)
        forked = await store.load(fork)
        assert forked is not None
        assert forked.state["ask"]["messages"] == expected_messages(80) + expected_messages(1)
        assert len(forked.history) == 81
        source = await store.load(original)
        assert source is not None and len(source.history) == 80

    async def test_deleting_either_fork_leaves_the_other_whole(
        self, store: CheckpointStore,
    ) -> None:
        executor = chat_graph(store)
        original = await talk(executor, 30)
        fork = await executor.fork(original)
        await talk(executor, 2, fork)
        await store.delete(original)
        assert await store.load(original) is None and await store.list(original) == []
        kept = await store.load(fork)
        assert kept is not None
        last = kept.history[-1]["output"]["messages"]
        assert last == expected_messages(30) + expected_messages(2)
        assert len(await store.list(fork)) == 1 + 2 * 3  # the copy, then three a turn
        await talk(executor, 1, fork)
        await store.delete(fork)
        assert await store.load(fork) is None
        again = await executor.run({"messages": []}, thread_id=original)
        assert again.status == "interrupted"

    async def test_deleting_the_original_keeps_a_fork_not_yet_resumed(
        self, store: CheckpointStore,
    ) -> None:
        executor = chat_graph(store)
        original = await talk(executor, 5)
        fork = await executor.fork(original)
        copied = await store.load(fork)
        assert copied is not None
        await store.delete(original)
        kept = await store.load(fork)
        assert kept is not None and kept.id == copied.id
        assert kept.state == copied.state and kept.history == copied.history
        assert [cp.id for cp in await store.list(fork)] == [copied.id]
        await talk(executor, 1, fork)
        resumed = await store.load(fork)
        assert resumed is not None
        assert resumed.state["ask"]["messages"] == expected_messages(5) + expected_messages(1)

    async def test_history_is_built_only_when_read(self, store: CheckpointStore) -> None:
        executor = chat_graph(store)
        thread = await talk(executor, 20)
        latest = await store.load(thread)
        assert latest is not None
        assert "_history" not in vars(latest) or latest._source is not None
        assert latest.history[-1]["output"]["messages"] == expected_messages(20)


def grow(inp: dict[str, Any]) -> dict[str, Any]:
    """Changes its input in place and returns it."""
    inp["items"].append(len(inp["items"]))
    inp["count"] = len(inp["items"])
    return inp


def peek(inp: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Changes its input in place, then pauses."""
    inp["items"].clear()
    return {**inp, "answer": ctx.interrupt({"question": "ok?"})}


class InPlaceConformance:
    """A node is lent its input; one that changes it in place still leaves every
    checkpoint as it would be had the node been given a copy."""

    @pytest.mark.parametrize("pad", ["", "x" * 5000])  # small, and past SMALL_TEXT
    async def test_a_node_that_changes_its_input_in_place_is_kept_right(
        self, store: CheckpointStore, pad: str,
    ) -> None:
        executor = DurableExecutor([("grow", grow), ("again", grow), ("peek", peek)],
                                   store=store, name="in-place")
        paused = await executor.run({"items": [], "pad": pad})
        assert paused.status == "interrupted"
        loaded = await store.load(paused.thread_id)
        assert loaded is not None
        assert loaded.pending_input == {"items": [0, 1], "pad": pad, "count": 2}
        assert (await store.list(paused.thread_id))[-1] == loaded
        assert [h["output"] for h in loaded.history] == [
            {"items": [0], "pad": pad, "count": 1}, {"items": [0, 1], "pad": pad, "count": 2}]
        done = await executor.resume(paused.thread_id, "yes")
        assert done.output == {"items": [], "pad": pad, "count": 2, "answer": "yes"}
        checkpoints = await store.list(paused.thread_id)
        assert checkpoints[-1].state == {"grow": {"items": [0], "pad": pad, "count": 1},
                                         "again": {"items": [0, 1], "pad": pad, "count": 2},
                                         "peek": done.output}
        assert checkpoints[0].engine.tasks[0]["input"] == {"items": [], "pad": pad}
        for cp in checkpoints:
            assert await store.load_by_id(cp.id) == cp


class BlockingStoreConformance:
    """The blocking twins (``runtime.checkpoint.BlockingStore``), for a store that offers
    them: the same answers as the async methods, and the same compare-and-set."""

    async def test_is_a_blocking_store(self, store: CheckpointStore) -> None:
        assert isinstance(store, BlockingStore)
        assert isinstance(store.can_block_here(), bool)

    async def test_the_twins_save_and_load_in_the_store_thread(
        self, store: CheckpointStore,
    ) -> None:
        assert isinstance(store, BlockingStore)

        def head(parent: str | None, **changes: Any) -> Draft:
            made = make_checkpoint("t-twin", parent, run_id="r-twin", **changes)
            return Draft(**made.head_fields(), additions=Additions(
                history=[{"node": "prepare", "output": {"amount": 5}, "task_id": "t0"}]))

        def in_thread() -> tuple[Draft | None, Draft | None]:
            first = head(None)
            store.save_head_sync(first)
            assert not first.additions  # a save takes in what the run added
            store.save_head_sync(head(first.id, status="completed"))
            with pytest.raises(CheckpointConflict):
                store.save_head_sync(head(first.id))
            return store.load_head_sync("t-twin"), store.load_run_head_sync("r-twin")

        latest, of_run = await store.call_in_store_thread(in_thread)
        assert latest is not None and of_run is not None and latest.status == "completed"
        assert of_run.head_fields() == latest.head_fields()
        whole = await store.load("t-twin")
        assert whole is not None and whole.id == latest.id
        assert whole.history == [{"node": "prepare", "output": {"amount": 5}}] * 2
        assert [cp.id for cp in await store.list("t-twin")][-1] == latest.id
        assert await store.call_in_store_thread(lambda: store.load_head_sync("nope")) is None
