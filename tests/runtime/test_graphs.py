"""Graph shapes: order, routes, fan-out, fan-in, END, node kinds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime import END, CheckpointStore, DurableExecutor, NodeContext, NodeError

from .helpers import Calls, latest


def add(n: int) -> Any:
    def node(x: int) -> int:
        return x + n
    return node


async def test_without_edges_nodes_run_in_list_order(store: CheckpointStore) -> None:
    """Each node gets its predecessor's output; the output is the last node's."""
    seen: list[str] = []

    def step(name: str) -> Any:
        def node(x: list[str]) -> list[str]:
            seen.append(name)
            return [*x, name]
        return node

    ex = DurableExecutor(nodes=[("c", step("c")), ("a", step("a")), ("b", step("b"))], store=store)
    result = await ex.run([])
    assert result.status == "completed"
    assert result.output == ["c", "a", "b"]
    assert seen == ["c", "a", "b"]


async def test_route_picks_the_next_node(store: CheckpointStore) -> None:
    def triage(x: int) -> int:
        return x

    ex = DurableExecutor(
        nodes=[("triage", triage), ("small", lambda x: f"small {x}"),
               ("big", lambda x: f"big {x}")],
        edges={"triage": lambda out: "big" if out > 10 else "small",
               "small": lambda _: END, "big": lambda _: END},
        store=store,
    )
    assert (await ex.run(3)).output == "small 3"
    assert (await ex.run(30)).output == "big 30"


async def test_route_can_read_ctx(store: CheckpointStore) -> None:
    """A route may be ``route(output, ctx)``."""
    routed: list[str] = []

    def route(out: Any, ctx: NodeContext) -> str:
        routed.append(ctx.node)
        return END

    ex = DurableExecutor(nodes=[("a", add(1)), ("b", add(100))], edges={"a": route}, store=store)
    result = await ex.run(1)
    assert result.output == 2
    assert routed == ["a"]


async def test_end_stops_before_later_nodes(store: CheckpointStore) -> None:
    calls = Calls()

    def never(x: Any) -> Any:
        calls.hit("never")
        return x

    ex = DurableExecutor(nodes=[("a", add(1)), ("b", never)], edges={"a": lambda _: END},
                         store=store)
    result = await ex.run(1)
    assert result.status == "completed"
    assert result.output == 2
    assert calls["never"] == 0


async def test_loop_via_route(store: CheckpointStore) -> None:
    """Routes may go back to an earlier node; each visit is a new step."""
    ex = DurableExecutor(nodes=[("inc", add(1))],
                         edges={"inc": lambda out: "inc" if out < 5 else END}, store=store)
    assert (await ex.run(0)).output == 5


async def test_parallel_fan_out_runs_as_tasks_of_one_step(store: CheckpointStore) -> None:
    """A list of names runs in parallel: both tasks are in flight at once."""
    both_started = asyncio.Event()
    started: list[str] = []

    def branch(name: str) -> Any:
        async def node(x: int, ctx: NodeContext) -> dict[str, Any]:
            started.append(name)
            if len(started) == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), timeout=5)
            return {"name": name, "x": x, "task": ctx.task_id}
        return node

    ex = DurableExecutor(
        nodes=[("split", add(0)), ("left", branch("left")), ("right", branch("right")),
               ("join", lambda parts: parts)],
        edges={"split": lambda _: ["left", "right"], "left": lambda _: "join",
               "right": lambda _: "join"},
        store=store,
    )
    result = await ex.run(7)
    assert result.status == "completed"
    assert sorted(started) == ["left", "right"]
    out = result.output
    assert set(out) == {"left", "right"}
    assert out["left"]["x"] == out["right"]["x"] == 7
    assert out["left"]["task"] != out["right"]["task"]
    cp = await latest(ex.store, result.thread_id)
    # fan-out and fan-in each made one step, so their history entries sit side by side
    assert [h["node"] for h in cp.history][:1] == ["split"]
    assert sorted(h["node"] for h in cp.history[1:3]) == ["left", "right"]
    assert cp.history[3]["node"] == "join"


async def test_fan_in_gets_predecessor_outputs_by_name(store: CheckpointStore) -> None:
    ex = DurableExecutor(
        nodes=[("start", add(0)), ("double", lambda x: x * 2), ("square", lambda x: x * x),
               ("join", lambda parts: parts)],
        edges={"start": lambda _: ["double", "square"], "double": lambda _: "join",
               "square": lambda _: "join"},
        store=store,
    )
    assert (await ex.run(3)).output == {"double": 6, "square": 9}


async def test_route_returning_end_inside_a_list_ends_that_branch(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("a", add(1)), ("b", add(10))],
                         edges={"a": lambda _: [END, "b"]}, store=store)
    assert (await ex.run(0)).output == 11


@pytest.mark.parametrize("kind", ["sync", "sync_ctx", "async", "async_ctx"])
async def test_node_kinds(kind: str, store: CheckpointStore) -> None:
    """Sync and async nodes, with and without ctx, all take part the same way."""
    def sync_plain(x: int) -> int:
        return x + 1

    def sync_ctx(x: int, ctx: NodeContext) -> int:
        assert ctx.node == "n"
        return x + 1

    async def async_plain(x: int) -> int:
        await asyncio.sleep(0)
        return x + 1

    async def async_ctx(x: int, ctx: NodeContext) -> int:
        assert ctx.node == "n"
        await asyncio.sleep(0)
        return x + 1

    fn = {"sync": sync_plain, "sync_ctx": sync_ctx, "async": async_plain,
          "async_ctx": async_ctx}[kind]
    ex = DurableExecutor(nodes=[("n", fn), ("m", add(10))], store=store)
    assert (await ex.run(1)).output == 12


async def test_sync_and_async_nodes_can_interrupt(store: CheckpointStore) -> None:
    def sync_ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("sync?")

    async def async_ask(x: Any, ctx: NodeContext) -> Any:
        return ctx.interrupt("async?")

    ex = DurableExecutor(nodes=[("s", sync_ask), ("a", async_ask)], store=store)
    paused = await ex.run(None)
    assert paused.interrupt_payload == "sync?"
    paused = await ex.resume(paused.thread_id, 1)
    assert paused.interrupt_payload == "async?"
    assert (await ex.resume(paused.thread_id, 2)).output == 2


async def test_route_to_unknown_node_is_a_node_error(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("a", add(1)), ("b", add(1))],
                         edges={"a": lambda _: "nowhere"}, store=store)
    with pytest.raises(NodeError) as info:
        await ex.run(0)
    assert info.value.node == "a"
    assert "nowhere" in str(info.value)


async def test_edges_naming_unknown_nodes_are_refused_at_build_time(store: CheckpointStore) -> None:
    with pytest.raises(ValueError, match="ghost"):
        DurableExecutor(nodes=[("a", add(1))], edges={"ghost": lambda _: END}, store=store)


async def test_store_none_runs_without_durability() -> None:
    """store=None: graphs without interrupts still run to completion."""
    ex = DurableExecutor(nodes=[("a", add(1)), ("b", add(2))], store=None)
    result = await ex.run(0)
    assert result.status == "completed"
    assert result.output == 3


async def test_non_json_run_input_is_refused(store: CheckpointStore) -> None:
    ex = DurableExecutor(nodes=[("a", add(1))], store=store)
    with pytest.raises(NodeError, match="set") as info:
        await ex.run({1, 2})
    assert info.value.node == "a"
