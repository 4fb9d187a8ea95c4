"""Graphs whose first node waits as an agent waits on a model, then asks a person.

``waiting`` awaits (an async client); ``waiting_sync`` blocks (a sync one); ``napping``
awaits ``input["seconds"]`` and asks nothing, then ends. The cluster registers them, so
tests and benches count how many runs a worker holds at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from runtime import DurableExecutor, NodeContext

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
