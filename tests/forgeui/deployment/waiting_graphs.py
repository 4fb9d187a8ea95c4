"""Graphs whose first node waits as an agent waits on a model, then asks a person.

``waiting`` awaits (an async client); ``waiting_sync`` blocks (a sync one); ``napping``
awaits ``input["seconds"]`` and asks nothing, then ends; ``held`` asks, then charges
once and awaits a gate file. The cluster registers them, so
tests and benches count how many runs a worker holds at once.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from runtime import DurableExecutor, NodeContext
from tests.forgeui.graphs import append_line

WAIT_S = 1.0


async def think(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    await asyncio.sleep(float(task.get("seconds", WAIT_S)))
    return {**task, "thought": True}


def think_blocking(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    time.sleep(float(task.get("seconds", WAIT_S)))
    return {**task, "thought": True}


def ask(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {**task, "answer": ctx.interrupt({"question": "Go on?"})}


def done(task: dict[str, Any]) -> dict[str, Any]:
    return {**task, "done": True}


waiting = DurableExecutor(nodes=[("think", think), ("ask", ask), ("done", done)],
                          name="waiting")
waiting_sync = DurableExecutor(nodes=[("think", think_blocking), ("ask", ask), ("done", done)],
                               name="waiting_sync")
napping = DurableExecutor(nodes=[("think", think), ("done", done)], name="napping")


async def charge_then_wait(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Charge once, then await the test's gate file (or a kill) without holding a thread."""
    receipt = await ctx.once_async("charge",
                                   lambda: append_line(task["ledger"], f"charged {task['n']}"))
    append_line(task["entered"], f"entered {task['n']}")
    # The gate is a file another process writes: polled, there is no event to await.
    while not os.path.exists(task["gate"]):  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.05)
    return {**task, "receipt": receipt}


# Asks first, so an answer is what sends the run into the node a worker is killed in.
held = DurableExecutor(nodes=[("ask", ask), ("charge", charge_then_wait), ("done", done)],
                       name="held")
