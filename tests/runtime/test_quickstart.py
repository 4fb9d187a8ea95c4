"""The README quick start: ask → execute, pause, answer, fork."""

from __future__ import annotations

from typing import Any

import pytest

from forgeui.demo.graphs import transfer
from runtime import CheckpointStore, DurableExecutor, InMemoryCheckpointStore, NodeContext

QUESTION = {"question": "Approve this transfer?"}
DONE = {"input": {"amount": 500}, "approved": {"ok": True}, "done": True}


def ask_approval(input: Any, ctx: NodeContext) -> dict[str, Any]:
    approved = ctx.interrupt({"question": "Approve this transfer?"})
    return {"input": input, "approved": approved}


def execute(input: dict[str, Any]) -> dict[str, Any]:
    return {**input, "done": True}


def quick_start() -> DurableExecutor:
    return DurableExecutor(nodes=[("ask", ask_approval), ("execute", execute)],
                           store=InMemoryCheckpointStore(), name="transfer")


@pytest.fixture(params=["inline", "examples"])
def executor(request: pytest.FixtureRequest) -> DurableExecutor:
    """The quick start as written in the README, and as the dashboard's demo ships it."""
    if request.param == "inline":
        return quick_start()
    return transfer.with_store(InMemoryCheckpointStore())


async def test_run_pauses_with_the_question(executor: DurableExecutor) -> None:
    result = await executor.run({"amount": 500})
    assert result.interrupted is True
    assert result.status == "interrupted"
    assert result.interrupt_payload == QUESTION
    assert result.output is None
    assert [i.node for i in result.interrupts] == ["ask"]
    assert result.thread_id and result.run_id and result.checkpoint_id


async def test_resume_completes_with_the_answer(executor: DurableExecutor) -> None:
    paused = await executor.run({"amount": 500})
    done = await executor.resume(paused.thread_id, {"ok": True})
    assert done.status == "completed"
    assert done.interrupted is False
    assert done.interrupt_payload is None
    assert done.interrupts == []
    assert done.output == DONE
    assert done.thread_id == paused.thread_id
    assert done.run_id == paused.run_id


async def test_fork_resumes_independently(executor: DurableExecutor) -> None:
    paused = await executor.run({"amount": 500})
    forked = await executor.fork(paused.thread_id)
    assert forked != paused.thread_id
    refused = await executor.resume(forked, {"ok": False})
    approved = await executor.resume(paused.thread_id, {"ok": True})
    assert refused.output == {"input": {"amount": 500}, "approved": {"ok": False}, "done": True}
    assert approved.output == DONE


async def test_given_thread_id_is_used(executor: DurableExecutor) -> None:
    result = await executor.run({"amount": 500}, thread_id="transfer-42")
    assert result.thread_id == "transfer-42"
    assert (await executor.resume("transfer-42", {"ok": True})).output == DONE


def test_sync_twins(executor: DurableExecutor) -> None:
    """Scripts and sync views drive the same flow without an event loop."""
    paused = executor.run_sync({"amount": 500})
    assert paused.interrupt_payload == QUESTION
    forked = executor.fork_sync(paused.thread_id)
    assert executor.resume_sync(paused.thread_id, {"ok": True}).output == DONE
    assert executor.resume_sync(forked, {"ok": True}).output == DONE


async def test_a_caller_can_choose_the_run_id_once(store: CheckpointStore) -> None:
    """A queue hands out the run id before the run starts; reusing it is refused."""
    from runtime import ResumeError

    ex = DurableExecutor(nodes=[("ask", ask_approval), ("execute", execute)], store=store)
    first = await ex.run({"amount": 1}, run_id="queued-run-1")
    assert first.run_id == "queued-run-1"
    with pytest.raises(ResumeError):
        await ex.run({"amount": 2}, run_id="queued-run-1")
