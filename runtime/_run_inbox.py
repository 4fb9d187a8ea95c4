"""Answers, cancels and steering: what people recorded for the tree, applied to a run."""

from __future__ import annotations

from typing import Any

from ._ids import now_ms
from ._run_state import waits_on_child
from ._run_tasks import TaskRunning


class InboxHandling(TaskRunning):
    """Applying the tree's inbox to this run's paused tasks, and cancelling the run."""

    def _apply_inbox(self) -> None:
        for task in self.cp.engine.tasks:
            if task["status"] != "interrupted":
                continue
            if waits_on_child(task):
                if self._subtree_has_work(task["child_run_id"]):
                    task["status"] = "pending"
                continue
            entry = self.tree.unapplied().get(task["interrupt_id"])
            if entry is not None:
                self._consume(task, entry)

    def _consume(self, task: dict[str, Any], entry: dict[str, Any]) -> None:
        iid = task.pop("interrupt_id")
        record = next(i for i in self.cp.interrupts if i["id"] == iid)
        self.cp.interrupts.remove(record)
        resolved = {**record, "status": "answered", "answer": entry["value"],
                    "answered_at": entry["at"], "answered_by": entry.get("by")}
        if entry.get("meta"):
            resolved["answer_meta"] = entry["meta"]
        self.cp.add_resolved([resolved])
        # The entry stays in the inbox until no checkpoint of the tree shows the interrupt
        # pending (see _stamp): a crash before the child's save must not lose the answer.
        self.tree.consumed.add(iid)
        self.dirty = True
        kind = record["kind"]
        if kind == "after":
            task["after"] = entry["value"]
            self._complete(task, task["output"])
        else:
            if kind == "before":
                task["before"] = entry["value"]
            else:
                if entry.get("meta"):  # kept by order, beside the answers the node gets
                    metas = task.setdefault("answer_meta", [])
                    metas.extend({} for _ in range(len(task["answers"]) - len(metas)))
                    metas.append(entry["meta"])
                task["answers"].append(entry["value"])
            task["status"] = "pending"
        if entry.get("child_policy") == "cancel":
            self._cancel_children()

    def _cancel_children(self) -> None:
        for task in self.cp.engine.tasks:
            if task["status"] == "interrupted" and waits_on_child(task):
                self.tree.cancels.add(task["child_run_id"])
                task["status"] = "pending"

    async def _cancel_run(self) -> None:
        """Cancel this run and everything below it; pending interrupts end as cancelled."""
        for task in self.cp.engine.tasks:
            if waits_on_child(task) and task["status"] in ("interrupted", "pending"):
                self.tree.cancels.add(task["child_run_id"])
                child = await self._open_child(task, self.graph.nodes[task["node"]].child)  # type: ignore[arg-type]
                await child.drive()
                self._adopt(child)
            if task["status"] in ("interrupted", "pending"):
                task.pop("interrupt_id", None)
                self._mark_cancelled(task)
        at = now_ms()
        self.cp.add_resolved([{**i, "status": "cancelled", "answer": None, "answered_at": at}
                              for i in self.cp.interrupts])
        self.cp.interrupts = []
        self.tree.cancels.discard(self.cp.run_id)
        self.dirty = True
        await self.save("cancelled")
