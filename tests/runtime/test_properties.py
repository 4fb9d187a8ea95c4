"""Stateful property tests: random answer sequences against a model.

The graph is a small tree: ``start`` fans out to ``a`` (asks twice) and the sub-agent
``child`` (``c`` asks, then the grandchild agent's ``g`` asks); ``join`` gathers both.
Hypothesis drives run / resume / resume_map / targeted resume / child_policy="cancel" /
fork / stale answers on
many threads of one store, and after every step the runtime must agree with the model:
no answer lost or delivered twice, no completed node run again, checkpoint lists that
only grow.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, event, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from runtime import (
    AmbiguousResume,
    Command,
    DurableExecutor,
    InMemoryCheckpointStore,
    NodeContext,
    ResumeTarget,
    RunResult,
    StaleResumeTarget,
)

from .reference_store import FullCopyReference

SLOTS = ("a0", "a1", "c", "g")
NAMESPACE = {"a": ["root"], "c": ["root", "child"], "g": ["root", "child", "grandchild"]}
SUB_AGENT = {"a": None, "c": "child", "g": "grandchild"}
CANCELLED = "<cancelled>"
Model = dict[str, Any]  # slot -> answer (None: not yet; CANCELLED), "cancelled" -> slot


class Recorder:
    """Logs every node invocation and completion: (root thread, node, task, event)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, str, str]] = []

    def log(self, ctx: NodeContext, event: str) -> None:
        with self.lock:
            self.events.append((ctx.thread_id.split("/")[0], ctx.node, ctx.task_id, event))


def build(store: InMemoryCheckpointStore, rec: Recorder) -> DurableExecutor:
    def tracked(body: Any) -> Any:
        def node(x: Any, ctx: NodeContext) -> Any:
            rec.log(ctx, "call")
            out = body(x, ctx)
            rec.log(ctx, "done")
            return out
        return node

    grandchild = DurableExecutor(
        nodes=[("g", tracked(lambda x, ctx: {**x, "g": ctx.interrupt("g?")}))],
        name="grandchild")
    child = DurableExecutor(
        nodes=[("c", tracked(lambda x, ctx: {"c": ctx.interrupt("c?")})),
               ("grandchild", grandchild)], name="child")
    return DurableExecutor(
        nodes=[("start", tracked(lambda x, ctx: x)),
               ("a", tracked(lambda x, ctx: [ctx.interrupt("a0?"), ctx.interrupt("a1?")])),
               ("child", child), ("join", tracked(lambda parts, ctx: parts))],
        edges={"start": lambda _: ["a", "child"], "a": lambda _: "join",
               "child": lambda _: "join"},
        store=store, name="root")


def expected_pending(model: Model) -> set[str]:
    pending = set()
    if model["a0"] is None:
        pending.add("a0")
    elif model["a1"] is None:
        pending.add("a1")
    if model["c"] is None:
        pending.add("c")
    elif model["g"] is None:
        pending.add("g")
    return pending


def completed_nodes(model: Model) -> set[str]:
    done = {"start"}
    if model["a1"] is not None:
        done.add("a")
    if model["c"] is not None:
        done.add("c")
    if model["g"] is not None:
        done.add("g")
    if all(model[s] is not None for s in SLOTS):
        done.add("join")
    return done


def slot_of(node: str, order: int) -> str:
    return f"a{order}" if node == "a" else node


def pending_slots(result: RunResult) -> dict[str, Any]:
    return {slot_of(i.node, i.order): i for i in result.interrupts}


def answers(model: Model) -> dict[str, Any]:
    return {s: model[s] for s in SLOTS if model[s] not in (None, CANCELLED)}


def assert_output(model: Model, output: Any) -> None:
    assert output["a"] == [model["a0"], model["a1"]]
    if CANCELLED in (model["c"], model["g"]):
        assert "child" in output  # what a cancelled child hands on is not specified
    else:
        assert output["child"] == {"c": model["c"], "g": model["g"]}


class TreeMachine(RuleBasedStateMachine):
    threads = Bundle("threads")

    def __init__(self) -> None:
        super().__init__()
        self.store = FullCopyReference()
        self.rec = Recorder()
        self.ex = build(self.store, self.rec)
        self.models: dict[str, Model] = {}
        self.snapshots: dict[str, list[tuple[str, Model]]] = defaultdict(list)
        self.answered: dict[str, list[str]] = defaultdict(list)  # interrupt ids per thread
        self.chains: dict[str, list[str]] = {}
        self.seen_events = 0
        self.before: dict[str, Model] = {}
        self.touched: set[str] = set()

    @initialize(target=threads)
    def first_thread(self) -> str:
        return self.start_thread()

    # -- helpers --------------------------------------------------------------------

    def state(self, thread: str) -> RunResult:
        return asyncio.run(self.ex.get_state(thread))

    def remember(self, thread: str, result: RunResult) -> None:
        self.snapshots[thread].append((result.checkpoint_id, dict(self.models[thread])))

    def begin(self) -> None:
        self.before = {t: dict(m) for t, m in self.models.items()}
        self.touched = set()

    def check(self, thread: str, result: RunResult) -> None:
        """The result agrees with the model: pending set, fields, output."""
        self.touched.add(thread)
        model = self.models[thread]
        pending = pending_slots(result)
        assert set(pending) == expected_pending(model), (pending, model)
        assert len(pending) == len(result.interrupts)
        for slot, i in pending.items():
            node = "a" if slot.startswith("a") else slot
            assert i.namespace == NAMESPACE[node]
            assert i.sub_agent_id == SUB_AGENT[node]
            assert i.payload == f"{slot}?"
        event(f"{len(pending)} pending after a step")
        if pending:
            assert result.status == "interrupted"
            assert result.output is None
        else:
            assert result.status == "completed"
            assert_output(model, result.output)
        self.remember(thread, result)

    def answer(self, thread: str, chosen: dict[str, str], result: RunResult) -> None:
        for slot, iid in chosen.items():
            self.models[thread][slot] = f"answer-for-{iid}"
            self.answered[thread].append(iid)
        self.check(thread, result)

    def draw_pending(self, data: st.DataObject, thread: str, many: bool) -> dict[str, Any]:
        pending = pending_slots(self.state(thread))
        names = sorted(pending)
        if many:
            names = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        else:
            names = [data.draw(st.sampled_from(names))]
        return {n: pending[n] for n in names}

    # -- rules ----------------------------------------------------------------------

    @rule(target=threads)
    def start(self) -> str:
        return self.start_thread()

    def start_thread(self) -> str:
        self.begin()
        result = self.ex.run_sync({"n": len(self.models)})
        self.models[result.thread_id] = dict.fromkeys(SLOTS)
        self.check(result.thread_id, result)
        return result.thread_id

    @rule(thread=threads, data=st.data())
    def resume_map(self, thread: str, data: st.DataObject) -> None:
        if not expected_pending(self.models[thread]):
            return
        self.begin()
        chosen = self.draw_pending(data, thread, many=True)
        answers = {i.id: f"answer-for-{i.id}" for i in chosen.values()}
        result = self.ex.resume_sync(thread, Command(resume_map=answers))
        self.answer(thread, {slot: i.id for slot, i in chosen.items()}, result)

    @rule(thread=threads, data=st.data())
    def resume_targeted(self, thread: str, data: st.DataObject) -> None:
        if not expected_pending(self.models[thread]):
            return
        self.begin()
        ((slot, i),) = self.draw_pending(data, thread, many=False).items()
        how = data.draw(st.sampled_from(["interrupt", "task", "namespace"]))
        narrow = {"interrupt": {"interrupt_id": i.id}, "task": {"task_id": i.task_id},
                  "namespace": {"namespace": i.namespace}}[how]
        result = self.ex.resume_targeted_sync(ResumeTarget(i.run_id, **narrow),
                                              f"answer-for-{i.id}")
        self.answer(thread, {slot: i.id}, result)

    @rule(thread=threads)
    def answer_parent_cancelling_children(self, thread: str) -> None:
        """child_policy="cancel": the pending child subtree ends cancelled, never re-run."""
        model = self.models[thread]
        pending = expected_pending(model)
        a_slot = next((p for p in pending if p.startswith("a")), None)
        if a_slot is None:
            return
        self.begin()
        state = self.state(thread)
        i = pending_slots(state)[a_slot]
        result = self.ex.resume_targeted_sync(
            ResumeTarget(state.run_id),
            Command(resume=f"answer-for-{i.id}", child_policy="cancel"))
        child_slot = next((p for p in pending if not p.startswith("a")), None)
        event(f"cancel policy with {child_slot or 'no child'} pending")
        if child_slot is not None:
            model["cancelled"] = child_slot
            for slot in ("c", "g"):
                model[slot] = CANCELLED if model[slot] is None else model[slot]
        self.answer(thread, {a_slot: i.id}, result)

    @rule(thread=threads)
    def resume_bare(self, thread: str) -> None:
        self.begin()
        pending = pending_slots(self.state(thread))
        before = self.chain(thread)
        if len(pending) == 1:
            ((slot, i),) = pending.items()
            result = self.ex.resume_sync(thread, f"answer-for-{i.id}")
            self.answer(thread, {slot: i.id}, result)
            return
        error = AmbiguousResume if pending else StaleResumeTarget
        event(f"bare resume refused with {error.__name__}")
        try:
            self.ex.resume_sync(thread, "bare")
        except error:
            pass
        else:
            raise AssertionError(f"expected {error.__name__} with pending {sorted(pending)}")
        assert self.chain(thread) == before

    @rule(thread=threads, data=st.data())
    def stale_answer(self, thread: str, data: st.DataObject) -> None:
        if not self.answered[thread]:
            return
        self.begin()
        iid = data.draw(st.sampled_from(self.answered[thread]))
        before = self.chain(thread)
        try:
            self.ex.resume_sync(thread, Command(resume_map={iid: "late"}))
        except StaleResumeTarget as exc:
            assert exc.latest["checkpoint_id"] is not None
        else:
            raise AssertionError("an answered interrupt took a second answer")
        assert self.chain(thread) == before

    @rule(target=threads, thread=threads, data=st.data())
    def fork(self, thread: str, data: st.DataObject) -> str:
        self.begin()
        checkpoint_id, model = data.draw(st.sampled_from(self.snapshots[thread]))
        at = data.draw(st.sampled_from([checkpoint_id, None]))
        event("fork latest" if at is None else "fork an earlier checkpoint")
        if at is None:
            model = dict(self.models[thread])
        new = self.ex.fork_sync(thread, at)
        self.models[new] = dict(model)
        self.check(new, self.state(new))
        return new

    # -- invariants -----------------------------------------------------------------

    def chain(self, thread: str) -> list[str]:
        return [cp.id for cp in asyncio.run(self.store.list(thread))]

    @invariant()
    def audit(self) -> None:
        asyncio.run(self._audit())
        self._completed_nodes_never_rerun()

    async def _audit(self) -> None:
        # Rebuilt from step records, every checkpoint equals its full copy.
        await self.store.assert_rebuilds_every_checkpoint()
        for root in self.models:
            tree = await self.ex.get_tree(root)
            await self._checkpoint_lists_only_grow([n.thread_id for n in tree])
            if root in self.touched:
                await self._results_match_the_model(root)
                await self._no_answer_lost(root, [n.checkpoint_id for n in tree])

    async def _results_match_the_model(self, root: str) -> None:
        state = await self.ex.get_state(root)
        assert set(pending_slots(state)) == expected_pending(self.models[root])
        if state.status == "completed":
            assert_output(self.models[root], state.output)

    async def _no_answer_lost(self, root: str, checkpoint_ids: list[str]) -> None:
        """Every answered slot is on record, in its run's checkpoint, exactly once."""
        recorded: dict[str, Any] = {}
        cancelled: list[str] = []
        for checkpoint_id in checkpoint_ids:
            cp = await self.store.load_by_id(checkpoint_id)
            assert cp is not None
            for r in cp.resolved:
                slot = slot_of(r["node"], r["order"])
                if r["status"] == "cancelled":
                    cancelled.append(slot)
                    continue
                assert slot not in recorded, f"{slot} answered twice in {root}"
                recorded[slot] = r["answer"]
        model = self.models[root]
        assert recorded == answers(model)
        assert cancelled == ([model["cancelled"]] if "cancelled" in model else [])

    async def _checkpoint_lists_only_grow(self, threads: list[str]) -> None:
        """Untouched threads do not change; touched ones only append."""
        for thread in threads:
            now = [cp.id for cp in await self.store.list(thread)]
            old = self.chains.get(thread, [])
            assert now[: len(old)] == old, f"history of {thread} was rewritten"
            self.chains[thread] = now

    def _completed_nodes_never_rerun(self) -> None:
        new = self.rec.events[self.seen_events:]
        self.seen_events = len(self.rec.events)
        for root, node, _task, kind in new:
            if kind == "call" and root in self.before:
                assert node not in completed_nodes(self.before[root]), (root, node)
        done: dict[tuple[str, str, str], int] = defaultdict(int)
        for root, node, task, kind in self.rec.events:
            if kind == "done":
                done[(root, node, task)] += 1
        assert all(n == 1 for n in done.values()), done


# Examples per run come from the hypothesis profile (tests/conftest.py).
TreeMachine.TestCase.settings = settings(
    stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestTree = TreeMachine.TestCase
