"""What one run being applied holds, and what every part of applying it shares.

``TreeState`` is shared by every run of one tree execution; ``RunState`` is one run's
working state, the base the parts of ``RunExecution`` (``_engine``) are built on:
saving (``_run_saving``), sub-agents (``_run_children``), tasks (``_run_tasks``), the
inbox (``_run_inbox``) and the loop itself.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

from ._graph import Graph, NodeSpec
from ._ids import new_id, task_id
from .checkpoint import BlockingStore, Draft, HeadStore, as_blocking
from .context import NodeContext
from .errors import CheckpointConflict, ForgeError, NodeError, ResumeError
from .types import Durability, SyncNodes

FINISHED: frozenset[str] = frozenset({"completed", "cancelled"})
# How a run's current step runs its nodes: several at once (sync ones in threads, and so
# do its sub-agents'), one alone, one sync node inline on the tree's loop, or one sync
# node on a blocking store's thread (``drive_on_store_thread``).
StepMode = Literal["parallel", "alone", "inline", "store-thread"]


@dataclass
class TreeState:
    """What every run of one tree execution shares: store, lease and the inbox."""

    store: HeadStore | None
    lease: str
    durability: Durability
    sync_nodes: SyncNodes
    # The tree's event loop; None while a sync caller drives it with no loop (``drive_here``).
    loop: asyncio.AbstractEventLoop | None
    inbox: dict[str, dict[str, Any]] = field(default_factory=dict)
    cancels: set[str] = field(default_factory=set)
    steering: list[dict[str, Any]] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)

    def unapplied(self) -> dict[str, dict[str, Any]]:
        """Accepted answers no run of this execution has taken in yet."""
        if not self.consumed:
            return self.inbox
        return {k: v for k, v in self.inbox.items() if k not in self.consumed}

    @classmethod
    def from_root(cls, root: Draft, store: HeadStore | None,
                  durability: Durability, sync_nodes: SyncNodes,
                  loop: asyncio.AbstractEventLoop | None) -> TreeState:
        """``loop``: the tree's event loop (None: a sync caller's, with no loop yet)."""
        return cls(
            store=store,
            lease=root.engine.lease or new_id(),
            durability=durability,
            sync_nodes=sync_nodes,
            loop=loop,
            inbox=dict(root.engine.answers),
            cancels=set(root.engine.cancels),
            steering=list(root.steering),
        )


def waits_on_child(task: dict[str, Any]) -> bool:
    """The task is a sub-agent's, paused inside it (not at its own breakpoint)."""
    return "child_run_id" in task and "interrupt_id" not in task


def cancelled_output(node: str) -> dict[str, Any]:
    """What a cancelled node (a cancelled sub-agent, say) hands on as its output."""
    return {"cancelled": True, "node": node}


def new_task(run_id: str, step: int, node: str, task_input: Any) -> dict[str, Any]:
    return {"id": task_id(run_id, step, node), "node": node, "input": task_input,
            "status": "pending", "answers": []}


class RunState(ABC):
    """One run (root or sub-agent) being applied; ``cp`` is the head it is writing."""

    def __init__(self, graph: Graph, cp: Draft, tree: TreeState,
                 base: str | None, parent: RunState | None = None) -> None:
        self.graph = graph
        self.cp = cp
        self.tree = tree
        self.base = base  # the thread's latest saved id: the parent of our next save
        self.parent = parent
        # Unsaved until the first save, so every execution saves before it returns:
        # the request that started it may wait for that save to reach the disk.
        self.dirty = True
        self._lock = asyncio.Lock()
        self.mode: StepMode = "alone"
        self._blocking: BlockingStore | None = as_blocking(tree.store)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @abstractmethod
    async def drive(self, save_first: bool = False, begun: NodeError | bool = False) -> None:
        """Run tasks until the run completes, pauses, is cancelled or fails: the loop
        (``RunExecution``), which a run drives its sub-agents with."""

    def _runnable(self) -> list[dict[str, Any]]:
        return [t for t in self.cp.engine.tasks if t["status"] == "pending"]

    def steering_for_run(self) -> list[dict[str, Any]]:
        return [n for n in self.tree.steering if n["run_id"] == self.cp.run_id]


def node_args(spec: NodeSpec, node_input: Any, ctx: NodeContext) -> tuple[Any, ...]:
    return (node_input, ctx) if spec.wants_ctx else (node_input,)


def node_error(task: dict[str, Any], exc: Exception) -> NodeError:
    """A node's failure, reported with its node and task; a lost lease or a bad resume
    is no node's failure and propagates."""
    if isinstance(exc, NodeError):
        return exc
    if isinstance(exc, CheckpointConflict | ResumeError):
        raise exc
    if isinstance(exc, ForgeError):
        return NodeError(task["node"], task["id"], str(exc))
    error = NodeError(task["node"], task["id"], f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error
