"""Checkpoints: one per step, append-only, never corrupted by a failure."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

from runtime import (
    Checkpoint,
    CheckpointStore,
    Draft,
    DurableExecutor,
    InMemoryCheckpointStore,
    NodeContext,
    NodeError,
    ResumeError,
    _jsonvalue,
    _records,
)
from runtime._whole_stores import heads_of
from runtime.checkpoint import BOOKKEEPING, FIELD_NAMES

from .helpers import checkpoint_ids, checkpoints, latest


def chain(store: CheckpointStore, durability: Any = "sync") -> DurableExecutor:
    """prepare → ask (pauses) → a → b → c."""
    def ask(x: Any, ctx: NodeContext) -> Any:
        return {**x, "answer": ctx.interrupt("?")}

    def tag(name: str) -> Any:
        return lambda x: {**x, name: True}

    return DurableExecutor(
        nodes=[("prepare", lambda x: {"n": x}), ("ask", ask), ("a", tag("a")),
               ("b", tag("b")), ("c", tag("c"))],
        store=store, durability=durability)


def assert_prefix(older: list[Any], newer: list[Any]) -> None:
    assert newer[: len(older)] == older


async def test_a_checkpoint_after_every_step_by_default(store: CheckpointStore) -> None:
    """Each step's outputs are saved before the next step starts: a crash never repeats it."""
    ex = chain(store)
    paused = await ex.run(1)
    done = await ex.resume(paused.thread_id, "y")
    saved = await checkpoints(ex.store, paused.thread_id)
    seen = [set(cp.state) for cp in saved]
    order = ["prepare", "ask", "a", "b", "c"]
    for k in range(1, len(order) + 1):
        assert set(order[:k]) in seen, f"no checkpoint right after step {order[k - 1]!r}"
    assert any(cp.id == paused.checkpoint_id and cp.status == "interrupted" for cp in saved)
    assert saved[-1].status == "completed"
    assert saved[-1].id == done.checkpoint_id


async def test_durability_exit_saves_fewer_checkpoints(
        new_store: Callable[[], CheckpointStore]) -> None:
    every_step, at_exit = chain(new_store(), "sync"), chain(new_store(), "exit")
    results = []
    for ex in (every_step, at_exit):
        paused = await ex.run(1)
        done = await ex.resume(paused.thread_id, "y")
        assert done.output == {"n": 1, "answer": "y", "a": True, "b": True, "c": True}
        results.append(len(await checkpoints(ex.store, paused.thread_id)))
    assert results[1] < results[0]


async def test_durability_exit_still_saves_pauses(store: CheckpointStore) -> None:
    ex = chain(store, "exit")
    paused = await ex.run(1)
    cp = await latest(ex.store, paused.thread_id)
    assert cp.status == "interrupted"
    assert cp.state == {"prepare": {"n": 1}}


async def test_history_and_checkpoint_list_are_append_only(store: CheckpointStore) -> None:
    ex = chain(store)
    paused = await ex.run(1)
    before = await checkpoints(ex.store, paused.thread_id)
    await ex.resume(paused.thread_id, "y")
    after = await checkpoints(ex.store, paused.thread_id)
    assert_prefix([cp.to_dict() for cp in before], [cp.to_dict() for cp in after])
    for older, newer in pairwise(after):
        assert_prefix(older.history, newer.history)
        assert newer.parent_id == older.id
    assert [h["node"] for h in after[-1].history] == ["prepare", "ask", "a", "b", "c"]
    assert after[-1].history[1] == {"node": "ask", "output": {"n": 1, "answer": "y"}}


async def test_checkpoint_fields(store: CheckpointStore) -> None:
    ex = chain(store)
    paused = await ex.run(1, thread_id="t-fields")
    cp = await latest(ex.store, "t-fields")
    assert isinstance(cp, Checkpoint)
    assert cp.thread_id == "t-fields"
    assert cp.node == "ask"
    assert cp.interrupt_payload == "?"
    assert cp.pending_input == {"n": 1}
    assert cp.state == {"prepare": {"n": 1}}
    assert cp.history == [{"node": "prepare", "output": {"n": 1}}]
    assert cp.run_id == paused.run_id
    assert isinstance(cp.created_at, int) and cp.created_at > 1_600_000_000_000
    assert Checkpoint.from_json(cp.to_json()) == cp


class Weird:
    """Not JSON."""


@pytest.mark.parametrize(("value", "type_name"), [
    (Weird(), "Weird"), ({1, 2}, "set"), (b"bytes", "bytes"),
])
async def test_non_json_output_fails_naming_node_and_type(
        value: Any, type_name: str, store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("ok", lambda x: {"fine": x}), ("bad", lambda x: value)],
                         store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(1, thread_id="t-bad")
    assert info.value.node == "bad"
    assert "bad" in str(info.value)
    assert type_name in str(info.value)
    cp = await latest(ex.store, "t-bad")
    assert cp.state == {"ok": {"fine": 1}}
    assert cp.history == [{"node": "ok", "output": {"fine": 1}}]
    for saved in await checkpoints(ex.store, "t-bad"):
        assert "bad" not in saved.state


async def test_nan_output_is_refused(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("nan", lambda x: {"score": math.nan})], store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(1, thread_id="t-nan")
    assert info.value.node == "nan"
    cp = await latest(ex.store, "t-nan")
    assert "nan" not in cp.state


@pytest.mark.parametrize("metadata", [
    {"score": math.nan}, {"when": Weird()}, {"tags": {1, 2}}, ["not", "a", "dict"],
])
async def test_run_metadata_that_is_not_json_is_refused_before_anything_is_saved(
        metadata: Any, store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("a", lambda x: x)], store=store)
    with pytest.raises(ResumeError, match="run metadata"):
        await ex.run(1, thread_id="t-meta", metadata=metadata)
    assert await checkpoints(ex.store, "t-meta") == []


async def test_run_metadata_is_kept_as_json_would_read_it_back(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("a", lambda x: x)], store=store)
    done = await ex.run(1, thread_id="t-meta", metadata={1: ("x", "y"), "who": "ann"})
    cp = await latest(ex.store, done.thread_id)
    assert cp.metadata == {"1": ["x", "y"], "who": "ann"}


# Values at the edges of what the fast writer writes exactly: past 64 bits, a lone
# surrogate, text outside ASCII, floats that spell differently, deep nesting.
EDGES: list[Any] = [
    2**64 + 1, -(2**63) - 1, "\ud800 alone", "é ☃ 😀", 1e16, 0.1, -0.0, 5e-324,
    {"deep": [[[{"k": [1, {"x": None}]}]]]}, "", [],
]


@pytest.mark.parametrize("value", EDGES)
def test_a_checkpoint_reads_back_exactly_whichever_writer_wrote_it(
        value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cp = Checkpoint(id="c", thread_id="t", node=None, interrupt_payload=None,
                    state={"v": value}, history=[], pending_input=None, created_at=1)
    for writer in ("orjson", "standard library"):
        if writer == "standard library":
            monkeypatch.setattr(_jsonvalue, "orjson", None)
        text = cp.to_json()
        assert json.loads(text) == json.loads(json.dumps(cp.to_dict())), writer
        back = Checkpoint.from_json(text)
        assert back == cp and repr(back.state["v"]) == repr(value), writer
    assert cp.to_json() == json.dumps(cp.to_dict(), separators=(",", ":"))


async def test_the_executors_bookkeeping_is_stored_flat_beside_the_rest(
        store: CheckpointStore) -> None:
    """Heads and whole copies already in databases keep reading: the bookkeeping a
    checkpoint carries in ``engine`` is stored under its old top-level names."""
    ex = chain(store)
    result = await ex.run({"amount": 1})
    cp = await latest(ex.store, result.thread_id)
    stored = cp.to_dict()
    assert list(stored) == list(FIELD_NAMES)
    assert stored["tasks"] == cp.engine.tasks and stored["lease"] is None
    assert ex.store is not None
    head = await heads_of(ex.store).load_head(result.thread_id)
    assert head is not None
    assert "engine" not in stored and "engine" not in _records.head_of(head)
    assert set(BOOKKEEPING) <= set(_records.head_of(head))
    back = Checkpoint.from_dict(json.loads(cp.to_json()))
    assert back.engine == cp.engine and back.to_dict() == stored
    public = {f.name for f in dataclasses.fields(Checkpoint)} - {"engine", "position"}
    assert set(FIELD_NAMES) == public | set(BOOKKEEPING)


def test_the_fast_writer_is_installed() -> None:
    """forge depends on orjson; without it every checkpoint is written more slowly."""
    assert _jsonvalue.orjson is not None


async def test_non_json_output_can_be_recovered_after_the_fix(store: CheckpointStore) -> None:
    fixed = {"on": False}
    calls: list[str] = []

    def first(x: Any) -> Any:
        calls.append("first")
        return x

    def flaky(x: Any) -> Any:
        return {"v": x} if fixed["on"] else {"v": {x}}

    ex = DurableExecutor(nodes=[("first", first), ("flaky", flaky)], store=store)
    with pytest.raises(NodeError):
        await ex.run(3, thread_id="t-fix")
    ids = await checkpoint_ids(ex.store, "t-fix")
    fixed["on"] = True
    done = await ex.recover("t-fix")
    assert done.status == "completed"
    assert done.output == {"v": 3}
    assert calls == ["first"]
    assert_prefix(ids, await checkpoint_ids(ex.store, "t-fix"))


async def test_node_exception_is_a_node_error_with_node_and_task(store: CheckpointStore) -> None:
    attempts: list[str] = []

    def shaky(x: Any, ctx: NodeContext) -> Any:
        attempts.append(ctx.task_id)
        if len(attempts) == 1:
            raise ValueError("upstream 503")
        return x * 2

    ex = DurableExecutor(nodes=[("double", lambda x: x * 2), ("shaky", shaky)], store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(5, thread_id="t-shaky")
    err = info.value
    assert err.node == "shaky"
    assert err.task_id == attempts[0]
    assert "upstream 503" in str(err)
    assert isinstance(err.__cause__, ValueError)
    cp = await latest(ex.store, "t-shaky")
    assert cp.state == {"double": 10}
    done = await ex.recover("t-shaky")
    assert done.output == 20
    assert attempts == [attempts[0], attempts[0]]


async def test_node_exception_in_a_parallel_step_keeps_the_good_checkpoint(
        store: CheckpointStore) -> None:
    def boom(x: Any) -> Any:
        raise KeyError("missing")

    ex = DurableExecutor(
        nodes=[("start", lambda x: x), ("good", lambda x: "g"), ("boom", boom),
               ("join", lambda parts: parts)],
        edges={"start": lambda _: ["good", "boom"], "good": lambda _: "join",
               "boom": lambda _: "join"},
        store=store,
    )
    with pytest.raises(NodeError) as info:
        await ex.run(0, thread_id="t-par")
    assert info.value.node == "boom"
    cp = await latest(ex.store, "t-par")
    assert "join" not in cp.state
    assert "start" in cp.state


async def test_failure_inside_a_sub_agent_can_be_recovered_from_the_root(
        store: CheckpointStore) -> None:
    broken = {"on": True}
    calls: list[str] = []

    def flaky(x: Any) -> Any:
        calls.append("flaky")
        if broken["on"]:
            raise RuntimeError("boom")
        return {"child": x}

    child = DurableExecutor(nodes=[("flaky", flaky)], name="child")
    ex = DurableExecutor(nodes=[("pre", lambda x: x + 1), ("child", child),
                                ("post", lambda x: {"post": x})], name="root", store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(1, thread_id="t-child")
    assert info.value.node == "flaky"
    cp = await latest(ex.store, "t-child")
    assert cp.state == {"pre": 2}
    broken["on"] = False
    done = await ex.recover("t-child")
    assert done.output == {"post": {"child": 2}}
    assert calls == ["flaky", "flaky"]


async def test_a_second_run_on_a_thread_appends_to_its_history(store: CheckpointStore) -> None:
    """A finished thread can run again; its checkpoints and once-records stay."""
    effects: list[int] = []

    def pay(x: int, ctx: NodeContext) -> Any:
        return ctx.once("pay", lambda: effects.append(x) or x)

    ex = DurableExecutor(nodes=[("pay", pay)], store=store)
    first = await ex.run(1, thread_id="t-again")
    ids = await checkpoint_ids(ex.store, "t-again")
    second = await ex.run(2, thread_id="t-again")
    assert second.run_id != first.run_id
    assert second.output == 1  # once is per thread: the recorded result, no second payment
    assert effects == [1]
    assert_prefix(ids, await checkpoint_ids(ex.store, "t-again"))


class CrashOnceStore(InMemoryCheckpointStore):
    """The process 'dies' (the save raises) the first time a step completed ``node``."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node, self.crashed = node, False

    async def save_head(self, draft: Draft) -> None:
        completed = {entry["node"] for entry in draft.additions.history}
        if self.node in completed and not self.crashed:
            self.crashed = True
            raise ConnectionError("worker lost")
        await super().save_head(draft)


async def test_recover_after_a_crash_does_not_rerun_saved_steps() -> None:
    calls: list[str] = []

    def step(name: str) -> Any:
        def node(x: list[str]) -> list[str]:
            calls.append(name)
            return [*x, name]
        return node

    store = CrashOnceStore("b")
    ex = DurableExecutor(nodes=[("a", step("a")), ("b", step("b")), ("c", step("c"))],
                         store=store)
    with pytest.raises(ConnectionError):
        await ex.run([], thread_id="t-crash")
    assert (await latest(store, "t-crash")).state == {"a": ["a"]}
    done = await ex.recover("t-crash")
    assert done.output == ["a", "b", "c"]
    assert calls == ["a", "b", "b", "c"]  # only the step whose save was lost runs again


async def test_recover_of_a_finished_or_waiting_thread_changes_nothing(
        store: CheckpointStore) -> None:
    def ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("?")

    ex = DurableExecutor(nodes=[("ask", ask)], store=store)
    paused = await ex.run(None)
    ids = await checkpoint_ids(ex.store, paused.thread_id)
    again = await ex.recover(paused.thread_id)
    assert again.interrupts == paused.interrupts
    assert await checkpoint_ids(ex.store, paused.thread_id) == ids
