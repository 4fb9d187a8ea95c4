"""Going on with a run never builds its history: run, resume, targeted resume, steering
and cancelling work from the thread's latest head and the records they write."""

from __future__ import annotations

from typing import Any

from runtime import DurableExecutor, InMemoryCheckpointStore, Lineage, ResumeTarget

from .store_conformance import chat, chat_graph


class NoHistoryStore(InMemoryCheckpointStore):
    """Fails the test if anything reads a thread's whole lineage of records (to build a
    checkpoint's history) while ``strict``."""

    strict = True

    def read_lineage(self, checkpoint_id: str, visible_only: bool) -> Lineage | None:
        if self.strict:
            raise AssertionError(f"the lineage of {checkpoint_id} read on the hot path")
        return super().read_lineage(checkpoint_id, visible_only)

    def read_thread(self, thread_id: str, stop: int | None = None) -> Lineage | None:
        if self.strict:
            raise AssertionError(f"the records of {thread_id} read on the hot path")
        return super().read_thread(thread_id, stop)


def agent_tree(store: NoHistoryStore) -> DurableExecutor:
    child = DurableExecutor([("ask", chat)], edges={"ask": lambda out, ctx=None: "ask"},
                            store=store, name="agent")
    return DurableExecutor([("start", lambda data: data), ("agent", child)], store=store,
                           name="tree")


def test_a_long_conversation_goes_on_without_its_history() -> None:
    store = NoHistoryStore()
    executor = chat_graph(store)
    result = executor.run_sync({"messages": []})
    for turn in range(30):
        result = executor.resume_sync(result.thread_id, f"turn {turn}")
    executor.steer_sync(ResumeTarget(result.run_id), "be brief")
    assert executor.cancel_sync(result.thread_id).status == "cancelled"
    store.strict = False
    latest = store.load_sync(result.thread_id)
    assert latest is not None and len(latest.history) == 31


async def test_a_sub_agent_is_answered_without_its_history() -> None:
    store, turns = NoHistoryStore(), 3
    tree = agent_tree(store)
    result = await tree.run({"messages": []})
    for turn in range(turns):
        [paused] = result.interrupts
        result = await tree.resume_targeted(
            ResumeTarget(paused.run_id, interrupt_id=paused.id), f"turn {turn}")
    [paused] = result.interrupts
    store.strict = False
    child = await store.load_run(paused.run_id)
    assert child is not None
    messages: Any = child.pending_input["messages"]
    assert [m["content"] for m in messages] == [f"turn {t}" for t in range(turns)]
    assert len(child.history) == turns
