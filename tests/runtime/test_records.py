"""Replaying step records: skipping to a late checkpoint gives what the whole walk gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime import DurableExecutor, InMemoryCheckpointStore, NodeContext
from runtime._jsonvalue import KnownTexts, dumps_proven
from runtime._records import _head_text, replay, snapshot
from tests.runtime.store_conformance import chat_graph, talk


def records_of(store: InMemoryCheckpointStore, thread_id: str) -> list[str]:
    return [store._records[cp_id][2] for cp_id in store._threads[thread_id]]


def ask(inp: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {"asked": inp, "answer": ctx.interrupt({"question": "ok?"})}


@pytest.mark.parametrize("skip", [0, 1, 6, 9, 11])
async def test_skipping_records_yields_the_same_checkpoints(skip: int) -> None:
    store = InMemoryCheckpointStore()
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


async def test_a_skip_leaves_the_start_it_was_given_as_it_was() -> None:
    store = InMemoryCheckpointStore()
    thread = await talk(chat_graph(store), 6)
    records = records_of(store, thread)
    *_, start = replay(records[:9])
    history, resolved = list(start.history), list(start.resolved)
    *_, last = replay(records[9:], start, skip=len(records) - 10)
    assert start.history == history and start.resolved == resolved
    assert len(last.history) == 6 and len(history) < 6


async def test_a_fork_replays_from_its_original_with_a_skip() -> None:
    store = InMemoryCheckpointStore()
    executor: DurableExecutor = chat_graph(store)
    original = await talk(executor, 5)
    fork = await executor.fork(original)
    await talk(executor, 2, fork)
    latest = await store.load(fork)
    assert latest is not None
    found = await store.load_by_id(latest.id)
    assert found is not None and found.history == latest.history
    assert len(found.history) == 7


def test_a_snapshot_of_a_head_shares_only_task_inputs_and_outputs() -> None:
    conversation = {"messages": [{"role": "user", "content": "hi"}]}
    task = {"id": "t1", "node": "ask", "input": conversation, "status": "interrupted",
            "answers": [], "output": {"done": False}}
    head = {"tasks": [task], "interrupts": [{"id": "i1", "payload": {"q": "?"}}],
            "once": {"k": [1]}, "status": "interrupted"}
    expected = json.loads(json.dumps(head))
    taken, read_again = snapshot(head), snapshot(head, json.dumps(head))
    # What the executor changes in place after a save, before the snapshot is first read,
    # does not reach it.
    task["status"] = "pending"
    task["answers"].append("yes")
    head["interrupts"][0]["checkpoint_id"] = "cp-2"
    head["interrupts"].append({"id": "i2"})
    head["once"]["k"].append(2)
    head["status"] = "running"
    assert read_again() == expected
    built = taken()
    assert built == expected
    assert built["tasks"][0]["input"] is conversation
    assert built["tasks"][0]["output"] is task["output"]
    assert snapshot({"status": "done"})() == {"status": "done"}
    # A large head is taken apart, whether its text is at hand or not.
    task["input"] = {"messages": ["x" * 5000]}
    large = snapshot(head, json.dumps(head))()
    assert large["tasks"][0]["input"] is task["input"]


@pytest.mark.parametrize("task_input", [
    {"messages": [{"content": "é ✓"}], "score": -0.0}, {"big": 2**70}, [1, [2]], "plain", None,
    {"messages": [{"content": "é ✓ " * 50}] * 40}, {"big": 2**70, "pad": "x" * 5000},
])
def test_a_head_written_around_known_texts_reads_back_equal(task_input: Any) -> None:
    texts = KnownTexts()
    head = {"run_id": "r", "tasks": [{"id": "t", "input": task_input, "output": [task_input]}]}
    once, twice = _head_text(head, texts), _head_text(head, texts)
    assert json.loads(once) == json.loads(twice) == head
    assert json.loads(once) == json.loads(dumps_proven(head))
