"""Running a step's tasks: a node called with its input (lent or copied), its output
checked and kept, or its pause recorded; a sub-agent's task runs its child run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ._graph import NodeSpec
from ._ids import interrupt_id, now_ms
from ._jsonvalue import NotJSON, json_clone, json_copy, json_copy_sharing
from ._lent import Lent, lend
from ._run_children import RunChildren
from ._run_state import cancelled_output, node_args
from .context import NodeContext
from .errors import NodeError
from .signal import InterruptSignal


@dataclass(slots=True)
class NodeCall:
    """One call of a task's node: what it is given, and what it returned."""

    given: Any
    ctx: NodeContext
    output: Any = None


class TaskRunning(RunChildren):
    """One task of the step, from its call to its completion or pause."""

    async def _run_task(self, task: dict[str, Any]) -> None:
        spec = self.graph.nodes[task["node"]]
        if self._pauses_before(task):
            return
        if spec.child is not None:
            await self._run_child(task, spec)
            return
        with self._calling(task) as call:
            call.output = await self._call(spec, call.given, call.ctx)

    def _run_sync_task(self, task: dict[str, Any]) -> None:
        """``_run_task`` for a sync node, called in the thread it is in."""
        spec = self.graph.nodes[task["node"]]
        if self._pauses_before(task):
            return
        with self._calling(task) as call:
            call.output = spec.fn(*node_args(spec, call.given, call.ctx))

    @contextmanager
    def _calling(self, task: dict[str, Any]) -> Iterator[NodeCall]:
        """Around one call of the task's node, sync or async: its input lent (or copied),
        taken back if the call pauses or fails; a pause recorded, an output settled."""
        lent = self._lend(task)
        call = NodeCall(self._given(task, lent), NodeContext(self, task))
        try:
            yield call
        except InterruptSignal as signal:
            self._take_back(lent)
            self._pause(task, signal.payload, signal.order, "node", signal)
            return
        except BaseException:
            self._take_back(lent)
            raise
        self._settle(task, call.output, lent)

    def _pauses_before(self, task: dict[str, Any]) -> bool:
        """Pause at an ``interrupt_before`` breakpoint not yet answered."""
        if task["node"] not in self.graph.before or "before" in task:
            return False
        payload = {"kind": "before", "node": task["node"], "input": task["input"]}
        self._pause(task, payload, 0, "before")
        return True

    def _lend(self, task: dict[str, Any]) -> Lent | None:
        """The task's input lent to its node, when it runs alone and each step is saved
        before the next: then nothing else holds what the node could change. Otherwise
        (None) the node gets a copy."""
        if self.mode == "parallel" or self.tree.durability != "sync":
            return None
        return lend(task["input"])

    @staticmethod
    def _given(task: dict[str, Any], lent: Lent | None) -> Any:
        return lent.value if lent is not None else json_clone(task["input"])

    def _take_back(self, lent: Lent | None, intact: bool | None = None) -> None:
        """A lent input the node changed in place is put back, and the next save is
        whole: the head it would be a patch against shares what the node changed."""
        if lent is None or (lent.intact() if intact is None else intact):
            return
        lent.put_back()
        self.cp.saved = None  # it may share what the node changed

    def _settle(self, task: dict[str, Any], output: Any, lent: Lent | None = None) -> None:
        intact = lent is not None and lent.intact()
        try:
            # Copied before a changed input is put back (the output may be that input);
            # what a large input left intact shares with it is proven already.
            if lent is not None and intact and lent.large:
                output = json_copy_sharing(output, lent.value)
            else:
                output = json_copy(output)
        except NotJSON as exc:
            raise NodeError(task["node"], task["id"], f"returned {exc}") from None
        finally:
            self._take_back(lent, intact)
        self._complete_or_pause_after(task, output)

    def _complete_or_pause_after(self, task: dict[str, Any], output: Any) -> None:
        """Complete the task, or pause after it when the graph has a breakpoint there."""
        if task["node"] in self.graph.after and "after" not in task:
            task["output"] = output
            payload = {"kind": "after", "node": task["node"], "output": output}
            self._pause(task, payload, 0, "after")
            return
        self._complete(task, output)

    async def _call(self, spec: NodeSpec, node_input: Any, ctx: NodeContext) -> Any:
        args = node_args(spec, node_input, ctx)
        if spec.is_async:
            return await spec.fn(*args)
        if self.mode == "parallel" or self.tree.sync_nodes == "thread":
            # Parallel sync tasks overlap in threads; "thread" also suits nodes that block
            # or use an ORM that refuses to run inside an event loop (Django's).
            return await asyncio.to_thread(spec.fn, *args)
        self.mode = "inline"  # alone in its step: a thread hop would cost more
        try:
            return spec.fn(*args)
        finally:
            self.mode = "alone"

    def _pause(self, task: dict[str, Any], payload: Any, order: int, kind: str,
               signal: InterruptSignal | None = None) -> None:
        iid = interrupt_id(self.cp.run_id, task["id"], kind, order)
        created = now_ms()
        deadline_s = signal.deadline_s if signal else None
        self.cp.interrupts.append({
            "id": iid, "node": task["node"], "task_id": task["id"], "payload": payload,
            "order": order, "namespace": list(self.cp.namespace), "run_id": self.cp.run_id,
            "sub_agent_id": self.cp.sub_agent_id, "checkpoint_id": "",
            "thread_id": self.cp.thread_id, "kind": kind, "created_at": created,
            "deadline_at": created + int(deadline_s * 1000) if deadline_s is not None else None,
            "has_default": bool(signal and signal.has_default),
            "default": signal.default if signal else None,
            "assignees": signal.assignees if signal else None,
            "summary_fields": signal.summary_fields if signal else None,
            "sensitive": signal.sensitive if signal else None,
        })
        task["status"] = "interrupted"
        task["interrupt_id"] = iid

    def _complete(self, task: dict[str, Any], output: Any) -> None:
        task["status"] = "done"
        task["output"] = output
        self.cp.add_history({"node": task["node"], "output": output, "task_id": task["id"]})

    def _mark_cancelled(self, task: dict[str, Any]) -> None:
        # An explicit marker, not None: the next node must be able to tell "cancelled"
        # apart from a sub-agent that finished with nothing to say.
        marker = cancelled_output(task["node"])
        task["status"] = "cancelled"
        task["output"] = marker
        self.cp.add_history({"node": task["node"], "output": marker, "cancelled": True,
                             "task_id": task["id"]})

    async def _run_child(self, task: dict[str, Any], spec: NodeSpec) -> None:
        assert spec.child is not None
        child = await self._open_child(task, spec.child)
        await child.drive()
        self._adopt(child)
        status = child.cp.status
        if status == "completed":
            self._complete_or_pause_after(task, child.cp.output)
        elif status == "cancelled":
            self._mark_cancelled(task)
        else:
            task["status"] = "interrupted"
