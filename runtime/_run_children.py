"""Sub-agents: a task whose node is a graph runs it as a child run, in a thread of its own."""

from __future__ import annotations

from typing import Any, Self

from . import _tree
from ._graph import Graph
from ._ids import new_id, now_ms
from ._run_saving import RunSaving
from ._run_state import RunState, new_task
from .checkpoint import Additions, Draft, RunBookkeeping


class RunChildren(RunSaving):
    """Opening a sub-agent's run, and folding its summary into ours."""

    async def _open_child(self, task: dict[str, Any], child_graph: Graph) -> Self:
        store = self.tree.store
        thread = task.get("child_thread_id")
        existing = await store.load_head(thread) if store is not None and thread else None
        if existing is not None:
            return type(self)(child_graph, existing, self.tree, existing.id, self)
        thread = f"{self.cp.thread_id}/{task['node']}:{task['id'][:8]}"
        run_id = new_id()
        cp = Draft(
            id="", thread_id=thread, node=None, interrupt_payload=None, pending_input=None,
            created_at=now_ms(), run_id=run_id,
            namespace=[*self.cp.namespace, task["node"]], graph=self.cp.graph,
            root_thread_id=self.cp.root_thread_id, parent_run_id=self.cp.run_id,
            parent_thread_id=self.cp.thread_id, sub_agent_id=task["node"],
            metadata={"parent_task_id": task["id"]},
            engine=RunBookkeeping(tasks=[new_task(run_id, 0, child_graph.first, task["input"])],
                                  lease=self.tree.lease, outputs={}, routes=[]),
            additions=Additions(reset=True),
        )
        task["child_thread_id"] = thread
        task["child_run_id"] = run_id
        return type(self)(child_graph, cp, self.tree, None, self)

    def _adopt(self, child: RunState) -> None:
        """Fold a child's summary (and its descendants') into ours."""
        self.cp.engine.children[child.cp.run_id] = _tree.root_summary(child.cp)
        self.cp.engine.children.update(child.cp.engine.children)
        self.dirty = True

    def _subtree_has_work(self, child_run_id: str) -> bool:
        subtree = _tree.descendants(self.cp, child_run_id)
        if subtree & self.tree.cancels:
            return True
        return any(entry["run_id"] in subtree for entry in self.tree.unapplied().values())
