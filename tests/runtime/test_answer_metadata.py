"""Metadata recorded beside an answer (who approved it) reaches the node, apart from the value."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime import CheckpointStore, Command, DurableExecutor, NodeContext, ResumeTarget
from runtime.errors import ResumeError


def ask_twice(input: Any, ctx: NodeContext) -> dict[str, Any]:
    first = ctx.interrupt({"question": "first?"})
    first_meta = ctx.answer_metadata()
    second = ctx.interrupt({"question": "second?"})
    return {"first": first, "second": second, "first_meta": first_meta,
            "second_meta": ctx.answer_metadata(), "by_order": ctx.answer_metadata(0),
            "out_of_range": ctx.answer_metadata(5)}


def test_the_node_reads_each_answers_metadata_by_order(store: CheckpointStore) -> None:
    executor = DurableExecutor(nodes=[("ask", ask_twice)], name="meta", store=store)
    paused = executor.run_sync({})
    meta = {"approved_by": ["alice", "bob"], "policy": "four-eyes"}
    again = executor.resume_sync(paused.thread_id, Command(resume=True, metadata=meta))
    assert again.interrupted
    done = executor.resume_sync(paused.thread_id, False)  # no metadata this time
    assert done.output == {"first": True, "second": False, "first_meta": meta,
                           "second_meta": {}, "by_order": meta, "out_of_range": {}}
    assert executor.store is not None
    history = asyncio.run(executor.store.list(paused.thread_id))[-1]
    answered = [r for r in history.resolved if r["status"] == "answered"]
    assert answered[0]["answer_meta"] == meta and "answer_meta" not in answered[1]


def test_metadata_must_be_a_json_dict(store: CheckpointStore) -> None:
    executor = DurableExecutor(nodes=[("ask", ask_twice)], name="meta", store=store)
    paused = executor.run_sync({})
    target = ResumeTarget(run_id=paused.run_id)
    with pytest.raises(ResumeError, match="must be a dict"):
        executor.resume_targeted_sync(target, Command(resume=True, metadata=["x"]))  # type: ignore[arg-type]
    with pytest.raises(ResumeError, match="answer metadata"):
        executor.resume_targeted_sync(target, Command(resume=True, metadata={"x": object()}))
    assert executor.resume_sync(paused.thread_id, True).interrupted  # nothing was recorded
