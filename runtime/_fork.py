"""Copying a run tree, as of one root checkpoint, into a new thread.

Run ids are new in the copy, and interrupt ids derive from run ids, so a fork's
interrupts never collide with the original's; the original is not touched.
"""

from __future__ import annotations

from . import _tree
from ._ids import interrupt_id, new_id, now_ms
from .checkpoint import Checkpoint, CheckpointStore


class _Renamer:
    def __init__(self, old_thread: str, new_thread: str, run_ids: list[str]) -> None:
        self.old_thread, self.new_thread = old_thread, new_thread
        self.runs = {rid: new_id() for rid in run_ids}

    def thread(self, thread_id: str | None) -> str | None:
        if thread_id is None:
            return None
        return self.new_thread + thread_id[len(self.old_thread):]

    def run(self, run_id: str | None) -> str | None:
        return self.runs.get(run_id, run_id) if run_id is not None else None

    def checkpoint(self, src: Checkpoint) -> Checkpoint:
        cp = Checkpoint.from_json(src.to_json())
        cp.id, cp.parent_id, cp.created_at = new_id(), None, now_ms()
        cp.forked_from, cp.lease, cp.answers, cp.cancels = src.id, None, {}, []
        cp.thread_id = self.thread(cp.thread_id) or ""
        cp.root_thread_id = self.new_thread
        cp.parent_thread_id = self.thread(cp.parent_thread_id)
        cp.run_id = self.run(cp.run_id) or ""
        cp.parent_run_id = self.run(cp.parent_run_id)
        for task in cp.tasks:
            if "child_thread_id" in task:
                task["child_thread_id"] = self.thread(task["child_thread_id"])
                task["child_run_id"] = self.run(task["child_run_id"])
        for record in cp.interrupts:
            record["id"] = interrupt_id(cp.run_id, record["task_id"], record["kind"],
                                        record["order"])
            record.update(run_id=cp.run_id, thread_id=cp.thread_id, checkpoint_id=cp.id)
            task = next(t for t in cp.tasks if t["id"] == record["task_id"])
            task["interrupt_id"] = record["id"]
        for note in cp.steering:
            note["run_id"] = self.run(note["run_id"])
        if cp.status == "running":  # nobody holds the copy's lease: it must be recovered
            cp.status = "failed"
            cp.error = {"message": "forked from a checkpoint taken mid-step; recover to go on"}
        return cp


async def fork_tree(store: CheckpointStore, src: Checkpoint) -> str:
    """Copy ``src`` (a root checkpoint) and its sub-agents' checkpoints; the new thread id."""
    new_thread = new_id()
    rename = _Renamer(src.thread_id, new_thread, [src.run_id, *src.children])
    originals: dict[str, Checkpoint] = {src.run_id: src}
    for old_run, summary in src.children.items():
        child = await store.load_by_id(summary["checkpoint_id"])
        if child is None:
            raise ValueError(f"sub-agent checkpoint {summary['checkpoint_id']!r} is missing")
        originals[old_run] = child
    copies = {old: rename.checkpoint(cp) for old, cp in originals.items()}
    summaries = {old: _tree.root_summary(cp) for old, cp in copies.items()}
    for old, cp in copies.items():
        cp.children = {summaries[rid]["run_id"]: summaries[rid] for rid in originals[old].children}
    root = copies.pop(src.run_id)
    for cp in copies.values():
        await store.save(cp)
    await store.save(root)  # last: a half-made fork is never reachable from a root
    return new_thread
