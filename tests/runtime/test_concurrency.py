"""Concurrent answers: one interrupt, one winner; distinct ones all land."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from runtime import (
    CheckpointStore,
    Command,
    Draft,
    DurableExecutor,
    InMemoryCheckpointStore,
    NodeContext,
    ResumeTarget,
    StaleResumeTarget,
)

from .helpers import Calls, latest, pending_by_node

RIVALS = 20


class YieldingStore(InMemoryCheckpointStore):
    """Gives up the loop inside every call, as a database client does, so rivals interleave."""

    async def load_head(self, thread_id: str) -> Draft | None:
        await asyncio.sleep(0)
        return await super().load_head(thread_id)

    async def save_head(self, draft: Draft) -> None:
        await asyncio.sleep(0)
        await super().save_head(draft)


@pytest.fixture(params=[InMemoryCheckpointStore, YieldingStore])
def store(request: pytest.FixtureRequest) -> InMemoryCheckpointStore:
    return request.param()


def transfer(calls: Calls, store: InMemoryCheckpointStore) -> DurableExecutor:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("approve?")

    def pay(answer: Any) -> dict[str, Any]:
        calls.hit("pay", answer)  # the side effect that must happen once
        return {"paid_by": answer}

    return DurableExecutor(nodes=[("ask", ask), ("pay", pay)], store=store)


def race_in_threads(count: int, attempt: Callable[[int], Any]) -> list[Any]:
    """Run ``attempt(n)`` in ``count`` OS threads released together; result or exception."""
    barrier = threading.Barrier(count)
    outcomes: list[Any] = [None] * count

    def worker(n: int) -> None:
        barrier.wait()
        try:
            outcomes[n] = attempt(n)
        except BaseException as exc:
            outcomes[n] = exc

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    return outcomes


def split_outcomes(outcomes: list[Any]) -> tuple[list[Any], list[BaseException]]:
    wins = [o for o in outcomes if not isinstance(o, BaseException)]
    losses = [o for o in outcomes if isinstance(o, BaseException)]
    return wins, losses


async def test_concurrent_resumes_of_one_interrupt_exactly_one_wins(
    store: InMemoryCheckpointStore,
) -> None:
    calls = Calls()
    ex = transfer(calls, store)
    paused = await ex.run(None)
    outcomes = await asyncio.gather(
        *(ex.resume(paused.thread_id, f"reviewer-{n}") for n in range(RIVALS)),
        return_exceptions=True)
    wins, losses = split_outcomes(list(outcomes))
    assert len(wins) == 1, outcomes
    assert len(losses) == RIVALS - 1
    assert all(isinstance(e, StaleResumeTarget) for e in losses), losses
    assert calls["pay"] == 1
    (winner,) = wins
    state = await ex.get_state(paused.thread_id)
    assert state.status == "completed"
    assert state.output == {"paid_by": calls.log[0][1]}
    if winner.status == "completed":
        assert winner.output == state.output


async def test_concurrent_resumes_in_separate_executors_sharing_a_store(
    store: InMemoryCheckpointStore,
) -> None:
    """Twenty workers, each with its own executor object, one shared store."""
    calls = Calls()
    paused = await transfer(calls, store).run(None)
    workers = [transfer(calls, store) for _ in range(RIVALS)]
    outcomes = await asyncio.gather(
        *(w.resume(paused.thread_id, n) for n, w in enumerate(workers)),
        return_exceptions=True)
    wins, losses = split_outcomes(list(outcomes))
    assert len(wins) == 1
    assert all(isinstance(e, StaleResumeTarget) for e in losses), losses
    assert calls["pay"] == 1


def test_concurrent_resume_sync_from_os_threads(store: CheckpointStore) -> None:
    calls = Calls()
    ex = transfer(calls, store)
    paused = ex.run_sync(None)
    outcomes = race_in_threads(RIVALS, lambda n: ex.resume_sync(paused.thread_id, f"thread-{n}"))
    wins, losses = split_outcomes(outcomes)
    assert len(wins) == 1, outcomes
    assert all(isinstance(e, StaleResumeTarget) for e in losses), losses
    assert calls["pay"] == 1
    final = asyncio.run(store.load(paused.thread_id))
    assert final is not None and final.status == "completed"


def two_approvals(calls: Calls, store: InMemoryCheckpointStore) -> DurableExecutor:
    def ask(name: str) -> Any:
        async def node(x: Any, ctx: NodeContext) -> Any:
            calls.hit(name)
            await asyncio.sleep(0.01)  # widen the window in which the answers race
            return ctx.interrupt(f"{name}?")
        return node

    return DurableExecutor(
        nodes=[("start", lambda x: x), ("legal", ask("legal")), ("finance", ask("finance")),
               ("decide", lambda parts: parts)],
        edges={"start": lambda _: ["legal", "finance"], "legal": lambda _: "decide",
               "finance": lambda _: "decide"},
        store=store,
    )


async def test_concurrent_answers_to_different_interrupts_are_both_applied(
    store: InMemoryCheckpointStore,
) -> None:
    calls = Calls()
    ex = two_approvals(calls, store)
    paused = await ex.run(None)
    by_node = pending_by_node(paused)
    outcomes = await asyncio.gather(
        ex.resume(paused.thread_id, Command(resume_map={by_node["legal"].id: "L"})),
        ex.resume(paused.thread_id, Command(resume_map={by_node["finance"].id: "F"})),
        return_exceptions=True)
    assert not any(isinstance(o, BaseException) for o in outcomes), outcomes
    state = await ex.get_state(paused.thread_id)
    assert state.status == "completed", state
    assert state.output == {"legal": "L", "finance": "F"}
    cp = await latest(store, paused.thread_id)
    assert {r["id"]: r["answer"] for r in cp.resolved} == {
        by_node["legal"].id: "L", by_node["finance"].id: "F"}


def test_concurrent_answers_to_different_interrupts_from_os_threads(store: CheckpointStore) -> None:
    calls = Calls()
    ex = two_approvals(calls, store)
    paused = ex.run_sync(None)
    by_node = pending_by_node(paused)
    answers = [("legal", "L"), ("finance", "F")]
    outcomes = race_in_threads(2, lambda n: ex.resume_sync(
        paused.thread_id, Command(resume_map={by_node[answers[n][0]].id: answers[n][1]})))
    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes
    final = asyncio.run(store.load(paused.thread_id))
    assert final is not None
    assert final.status == "completed", final.status
    assert final.output == {"legal": "L", "finance": "F"}


def sub_agents(calls: Calls, store: InMemoryCheckpointStore) -> DurableExecutor:
    """plan → [research_agent, writer_agent] (sub-agents that ask) → summarize."""
    def child(name: str, node: str) -> DurableExecutor:
        def work(x: Any, ctx: NodeContext) -> Any:
            calls.hit(node)
            return {"answer": ctx.interrupt(f"{node}?"), "steering": ctx.steering}
        return DurableExecutor(nodes=[(node, work)], name=name)

    def summarize(parts: Any) -> Any:
        calls.hit("summarize")
        return parts

    return DurableExecutor(
        nodes=[("plan", lambda x: x), ("research_agent", child("research_agent", "find")),
               ("writer_agent", child("writer_agent", "draft")), ("summarize", summarize)],
        edges={"plan": lambda _: ["research_agent", "writer_agent"],
               "research_agent": lambda _: "summarize", "writer_agent": lambda _: "summarize"},
        store=store, name="supervisor")


def child_interrupts(result: Any) -> dict[str, Any]:
    return {i.sub_agent_id: i for i in result.interrupts}


async def test_concurrent_targeted_resumes_of_one_child_interrupt(
    store: InMemoryCheckpointStore,
) -> None:
    calls = Calls()
    ex = sub_agents(calls, store)
    paused = await ex.run(None)
    research = child_interrupts(paused)["research_agent"]
    outcomes = await asyncio.gather(
        *(ex.resume_targeted(ResumeTarget(research.run_id, interrupt_id=research.id), n)
          for n in range(RIVALS)), return_exceptions=True)
    wins, losses = split_outcomes(list(outcomes))
    assert len(wins) == 1, outcomes
    assert all(isinstance(e, StaleResumeTarget) for e in losses), losses
    assert calls["find"] == 2  # the first run, and the one re-run with the winning answer
    assert calls["draft"] == 1


async def test_concurrent_answers_to_two_children_are_both_applied(
    store: InMemoryCheckpointStore,
) -> None:
    calls = Calls()
    ex = sub_agents(calls, store)
    paused = await ex.run(None)
    by_agent = child_interrupts(paused)
    outcomes = await asyncio.gather(
        ex.resume_targeted(ResumeTarget(by_agent["research_agent"].run_id), "R"),
        ex.resume_targeted(ResumeTarget(by_agent["writer_agent"].run_id), "W"),
        return_exceptions=True)
    assert not any(isinstance(o, BaseException) for o in outcomes), outcomes
    state = await ex.get_state(paused.thread_id)
    assert state.status == "completed", state
    assert state.output["research_agent"]["answer"] == "R"
    assert state.output["writer_agent"]["answer"] == "W"
    assert calls["summarize"] == 1


async def test_steering_note_recorded_while_a_sibling_resumes_is_kept(
    store: InMemoryCheckpointStore,
) -> None:
    ex = sub_agents(Calls(), store)
    paused = await ex.run(None)
    by_agent = child_interrupts(paused)
    writer = by_agent["writer_agent"]
    outcomes = await asyncio.gather(
        ex.resume_targeted(ResumeTarget(by_agent["research_agent"].run_id), "R"),
        ex.steer(ResumeTarget(writer.run_id), "shorter"), return_exceptions=True)
    assert not any(isinstance(o, BaseException) for o in outcomes), outcomes
    done = await ex.resume_targeted(ResumeTarget(writer.run_id), "W")
    assert done.output["writer_agent"] == {"answer": "W", "steering": ["shorter"]}
    assert done.output["research_agent"]["steering"] == []


def test_concurrent_targeted_resume_sync_of_a_child_from_os_threads(store: CheckpointStore) -> None:
    calls = Calls()
    ex = sub_agents(calls, store)
    paused = ex.run_sync(None)
    research = child_interrupts(paused)["research_agent"]
    target = ResumeTarget(research.run_id, interrupt_id=research.id)
    outcomes = race_in_threads(RIVALS, lambda n: ex.resume_targeted_sync(target, n))
    wins, losses = split_outcomes(outcomes)
    assert len(wins) == 1, outcomes
    assert all(isinstance(e, StaleResumeTarget) for e in losses), losses
    assert calls["find"] == 2
    final = asyncio.run(ex.get_state(paused.thread_id))
    assert [i.sub_agent_id for i in final.interrupts] == ["writer_agent"]
