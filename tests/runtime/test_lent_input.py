"""A lone node is lent its input, not a copy; one that changes it in place has it put back.
Parallel steps and ``durability="exit"`` still give each node a copy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime import CheckpointStore, DurableExecutor, InMemoryCheckpointStore, NodeContext
from runtime.types import Durability

from .test_records import ask, records_of

# Past SMALL_TEXT: an output shares what it keeps of such an input instead of copying it.
LARGE = {"items": [{"n": n, "text": "x" * 100} for n in range(100)]}


async def test_a_large_input_is_lent_and_passed_on_without_a_copy(store: CheckpointStore) -> None:
    seen: list[Any] = []

    def keep(inp: dict[str, Any]) -> dict[str, Any]:
        seen.append(inp)
        return {**inp, "kept": len(seen)}

    executor = DurableExecutor([("start", lambda data: LARGE), ("one", keep),
                                ("two", keep)], name="lent", store=store)
    assert (await executor.run({})).output == {**LARGE, "kept": 2}
    assert seen[0]["items"] is seen[1]["items"]  # no copy between the nodes


async def test_the_save_after_a_node_changed_its_input_is_whole() -> None:
    store = InMemoryCheckpointStore()  # a record store, to read its records

    def append(inp: dict[str, Any]) -> dict[str, Any]:
        inp["items"].append(len(inp["items"]))
        return {"items": inp["items"]}

    executor = DurableExecutor([("start", lambda data: {"items": [0]}), ("append", append),
                                ("ask", ask)], store=store, name="in-place")
    thread = (await executor.run({})).thread_id
    heads = [json.loads(record)["head"] for record in records_of(store, thread)]
    # Saved: the run, after start, after append (whole: its base shares what append
    # changed), at the pause (a patch again).
    assert ["v" in head for head in heads] == [True, False, True, False]
    assert (await store.list(thread))[-1].pending_input == {"items": [0, 1]}



def test_nodes_of_a_parallel_step_each_get_a_copy(store: CheckpointStore) -> None:
    seen: dict[str, Any] = {}

    def branch(name: str) -> Any:
        def node(inp: dict[str, Any]) -> dict[str, Any]:
            seen[name] = inp
            inp["items"].append(name)  # in place: the sibling must not see it
            return {"items": inp["items"]}
        return node

    executor = DurableExecutor(
        [("split", lambda data: {"items": []}), ("left", branch("left")),
         ("right", branch("right")), ("join", lambda parts: parts)],
        edges={"split": lambda _: ["left", "right"], "left": lambda _: "join",
               "right": lambda _: "join"}, name="fan-out", store=store)
    result = executor.run_sync({})
    assert result.output == {"left": {"items": ["left"]}, "right": {"items": ["right"]}}
    assert seen["left"] is not seen["right"]


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_only_a_saved_step_lends(durability: Durability, store: CheckpointStore) -> None:
    seen: list[Any] = []

    def keep(inp: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        seen.append(inp)
        return {"items": inp["items"]}

    executor = DurableExecutor([("start", lambda data: LARGE), ("keep", keep),
                                ("again", keep)], name="lend", durability=durability, store=store)
    assert executor.run_sync({}).output == LARGE
    assert (seen[0]["items"] is seen[1]["items"]) == (durability == "sync")


@pytest.mark.parametrize("pad", ["", "x" * 5000])  # small, and past SMALL_TEXT
async def test_a_key_a_node_adds_to_its_input_before_pausing_is_not_kept(
        pad: str, store: CheckpointStore) -> None:
    def add_then_ask(inp: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        inp["added"] = "by the node"  # in place, on a dict: put back means removed again
        return {**inp, "answer": ctx.interrupt({"question": "ok?"})}

    executor = DurableExecutor([("start", lambda data: {"items": [0], "pad": pad}),
                                ("ask", add_then_ask)], store=store, name="adds-a-key")
    paused = await executor.run({})
    assert paused.status == "interrupted"
    loaded = await store.load(paused.thread_id)
    assert loaded is not None and loaded.pending_input == {"items": [0], "pad": pad}
    done = await executor.resume(paused.thread_id, "yes")
    assert done.output == {"items": [0], "pad": pad, "added": "by the node", "answer": "yes"}
