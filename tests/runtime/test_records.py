"""Replaying step records: skipping to a late checkpoint gives what the whole walk gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime import DurableExecutor, InMemoryCheckpointStore, NodeContext
from runtime._jsonvalue import SMALL_TEXT, at_most
from runtime._records import replay
from runtime.store_kit import HEAD_EVERY
from tests.runtime.store_conformance import chat_graph, expected_messages, talk

# The record store's own tests: on the two stores built on the store kit.
STORE_KINDS = ("memory", "store-thread")


def records_of(store: InMemoryCheckpointStore, thread_id: str) -> list[str]:
    return [store._records[cp_id][2] for cp_id in store._threads[thread_id]]


def ask(inp: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {"asked": inp, "answer": ctx.interrupt({"question": "ok?"})}


@pytest.mark.parametrize("skip", [0, 1, 6, 9, 11])
async def test_skipping_records_yields_the_same_checkpoints(
        skip: int, store: InMemoryCheckpointStore) -> None:
    executor = DurableExecutor([("ask", ask), ("again", ask)], store=store, name="twice")
    thread = (await executor.run({"n": 0})).thread_id
    for n in range(2):
        await executor.resume(thread, f"yes {n}")
    await executor.run({"n": 1}, thread_id=thread)  # a new run: history restarts
    await executor.resume(thread, "after the restart")
    records = records_of(store, thread)
    whole = [r.checkpoint() for r in replay(records)]
    skipped = [r.checkpoint() for r in replay(records, skip=skip)]
    assert len(whole) == len(records) == 12
    assert skipped == whole[skip:]
    assert whole[-1].history[-1]["output"] == {"asked": {"n": 1}, "answer": "after the restart"}


async def test_a_skip_leaves_the_start_it_was_given_as_it_was(
        store: InMemoryCheckpointStore) -> None:
    thread = await talk(chat_graph(store), 6)
    records = records_of(store, thread)
    *_, start = replay(records[:9])
    history, resolved = list(start.history), list(start.resolved)
    *_, last = replay(records[9:], start, skip=len(records) - 10)
    assert start.history == history and start.resolved == resolved
    assert len(last.history) == 6 and len(history) < 6


async def test_a_fork_replays_from_its_original_with_a_skip(store: InMemoryCheckpointStore) -> None:
    executor: DurableExecutor = chat_graph(store)
    original = await talk(executor, 5)
    fork = await executor.fork(original)
    await talk(executor, 2, fork)
    latest = await store.load(fork)
    assert latest is not None
    found = await store.load_by_id(latest.id)
    assert found is not None and found.history == latest.history
    assert len(found.history) == 7


async def test_a_message_is_stored_once_and_heads_name_it(store: InMemoryCheckpointStore) -> None:
    thread = await talk(chat_graph(store), 40)
    records = records_of(store, thread)
    text = "".join(records)
    for message in expected_messages(40):
        assert text.count(message["content"]) == 3  # answer accepted, answer ended, output
    # The step that routes to the next task names its input: the output just recorded.
    moved = [json.loads(r) for r in records if '"input@"' in r]
    assert len(moved) == 40
    head, position = store._heads[thread]
    assert json.loads(head)["_values"] and position % HEAD_EVERY == 0
    latest, listed = await store.load(thread), (await store.list(thread))[-1]
    assert latest is not None and latest == listed
    assert latest.pending_input == {"messages": expected_messages(40)}


@pytest.mark.parametrize("turns", [HEAD_EVERY - 1, HEAD_EVERY, HEAD_EVERY + 3])
async def test_a_head_kept_whole_and_the_records_after_it_load_what_a_replay_gives(
        turns: int, store: InMemoryCheckpointStore) -> None:
    executor = chat_graph(store)
    thread = await talk(executor, turns)
    for checkpoint_id in store._threads[thread][-3:]:
        by_id = await store.load_by_id(checkpoint_id)
        assert by_id is not None
    latest = await store.load(thread)
    assert latest == (await store.list(thread))[-1]
    # Going on from it writes a patch, and loads the same again.
    await executor.resume(thread, "one more")
    again = await store.load(thread)
    assert again is not None and again == (await store.list(thread))[-1]
    assert again.history[-1]["output"]["messages"][-1]["content"] == "one more"


def test_telling_a_small_value_stops_at_its_budget() -> None:
    assert at_most(100, {"a": "x" * 10}) > 0
    assert at_most(100, {"a": "x" * 200}) == -1
    huge = [{"text": "y" * 100}] * 100_000
    assert at_most(SMALL_TEXT, huge) == -1  # without walking all of it
