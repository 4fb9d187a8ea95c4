"""Copying a run tree, as of one root checkpoint, into a new thread.

Run ids are new in the copy, and interrupt ids derive from run ids, so a fork's
interrupts never collide with the original's; the original is not touched. Only the
heads are copied: each copy's history is its original's, which the store keeps shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _records, _tree
from ._ids import interrupt_id, new_id, now_ms
from .checkpoint import REOPENED_BY_FORK, Draft, HeadStore
from .errors import ResumeError


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

    def checkpoint(self, src: Draft) -> Draft:
        cp = _records.copy_head(src)
        cp.id, cp.parent_id, cp.created_at = new_id(), None, now_ms()
        cp.forked_from = src.id
        cp.engine.lease, cp.engine.answers, cp.engine.cancels = None, {}, []
        cp.thread_id = self.thread(cp.thread_id) or ""
        cp.root_thread_id = self.new_thread
        cp.parent_thread_id = self.thread(cp.parent_thread_id)
        cp.run_id = self.run(cp.run_id) or ""
        cp.parent_run_id = self.run(cp.parent_run_id)
        for task in cp.engine.tasks:
            if "child_thread_id" in task:
                task["child_thread_id"] = self.thread(task["child_thread_id"])
                task["child_run_id"] = self.run(task["child_run_id"])
        for record in cp.interrupts:
            record["id"] = interrupt_id(cp.run_id, record["task_id"], record["kind"],
                                        record["order"])
            record.update(run_id=cp.run_id, thread_id=cp.thread_id, checkpoint_id=cp.id)
            task = next(t for t in cp.engine.tasks if t["id"] == record["task_id"])
            task["interrupt_id"] = record["id"]
        for note in cp.steering:
            note["run_id"] = self.run(note["run_id"])
        if cp.status == "running":  # nobody holds the copy's lease: it must be recovered
            cp.status = "failed"
            cp.error = {"message": "forked from a checkpoint taken mid-step; recover to go on"}
        return cp


async def fork_tree(store: HeadStore, src: Draft,
                    inputs: Mapping[str, Any] | None = None) -> str:
    """Copy ``src`` (a root checkpoint) and its sub-agents' checkpoints; the new thread id.

    ``inputs`` maps interrupt ids pending at ``src`` to a new input for the paused task:
    in the copy that task starts again from that input (its answers forgotten), and the
    runs above it wait to be recovered, as a copy taken mid-step does.
    """
    new_thread = new_id()
    rename = _Renamer(src.thread_id, new_thread, [src.run_id, *src.engine.children])
    originals: dict[str, Draft] = {src.run_id: src}
    for old_run, summary in src.engine.children.items():
        child = await _load_child(store, summary)
        if child is None:
            raise ValueError(f"sub-agent checkpoint {summary['checkpoint_id']!r} is missing")
        originals[old_run] = child
    copies = {old: rename.checkpoint(cp) for old, cp in originals.items()}
    for iid, value in (inputs or {}).items():
        _reopen(originals, copies, iid, value)
    summaries = {old: _tree.root_summary(cp) for old, cp in copies.items()}
    for old, cp in copies.items():
        cp.engine.children = {summaries[rid]["run_id"]: summaries[rid]
                              for rid in originals[old].engine.children}
    root = copies.pop(src.run_id)
    for cp in copies.values():
        await store.save_head(cp)
    await store.save_head(root)  # last: a half-made fork is never reachable from a root
    return new_thread


async def _load_child(store: HeadStore, summary: dict[str, Any]) -> Draft | None:
    """The sub-agent's checkpoint the summary names: its thread's latest when it still is
    (one read, and the copy is then saved as a patch against it), else rebuilt by id."""
    latest = await store.load_head(summary["thread_id"])
    if latest is not None and latest.id == summary["checkpoint_id"]:
        return latest
    return await store.load_head_by_id(summary["checkpoint_id"])


def _reopen(originals: dict[str, Draft], copies: dict[str, Draft], iid: str,
            value: Any) -> None:
    """Give the copy of the task paused at ``iid`` a new input, and reopen its ancestors."""
    old_run = next((run for run, cp in originals.items()
                    if any(i["id"] == iid for i in cp.interrupts)), None)
    if old_run is None:
        raise ResumeError(f"interrupt {iid!r} is not pending at the checkpoint forked")
    record = next(i for i in originals[old_run].interrupts if i["id"] == iid)
    cp = copies[old_run]
    task = next(t for t in cp.engine.tasks if t["id"] == record["task_id"])
    for key in ("interrupt_id", "before", "after", "output"):
        task.pop(key, None)
    task.update(input=value, status="pending", answers=[])
    task.pop("answer_meta", None)
    cp.interrupts = [i for i in cp.interrupts if i["task_id"] != task["id"]]
    while True:
        cp.status, cp.error = "running", None
        parent_old = originals[old_run].parent_run_id
        if parent_old is None:
            cp.status, cp.error = "failed", {"message": REOPENED_BY_FORK}
            return
        child_run = cp.run_id
        old_run, cp = parent_old, copies[parent_old]
        waiting = next(t for t in cp.engine.tasks if t.get("child_run_id") == child_run)
        waiting["status"] = "pending"
