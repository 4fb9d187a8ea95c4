"""Read-only questions about a run tree, answered from its root checkpoint alone."""

from __future__ import annotations

from typing import Any

from .checkpoint import Head
from .types import Interrupt, RunNode


def root_summary(root: Head) -> dict[str, Any]:
    return {
        "run_id": root.run_id,
        "thread_id": root.thread_id,
        "namespace": root.namespace,
        "sub_agent_id": root.sub_agent_id,
        "parent_run_id": root.parent_run_id,
        "status": root.status,
        "checkpoint_id": root.id,
        "interrupts": root.interrupts,
    }


def runs(root: Head) -> list[dict[str, Any]]:
    """Every run of the tree, root first, then by namespace (stable)."""
    return [root_summary(root), *_sorted_children(root.engine.children)]


def runs_of(head: dict[str, Any]) -> list[dict[str, Any]]:
    """``runs`` for a stored head: the root's interrupts, then each child's."""
    return [{"interrupts": head.get("interrupts", [])},
            *_sorted_children(head.get("children", {}))]


def _sorted_children(children: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(children.values(), key=lambda r: (r["namespace"], r["run_id"]))


def find_run(root: Head, run_id: str) -> dict[str, Any] | None:
    if run_id == root.run_id:
        return root_summary(root)
    return root.engine.children.get(run_id)


def pending(root: Head) -> list[dict[str, Any]]:
    """Pending interrupts of the whole tree, in a stable order (root's own first)."""
    return [i for run in runs(root) for i in run["interrupts"]]


def open_interrupts(root: Head) -> list[dict[str, Any]]:
    """Pending interrupts nobody has answered yet (accepted answers wait in the inbox)."""
    return [i for i in pending(root) if i["id"] not in root.engine.answers]


def descendants(root: Head, run_id: str) -> set[str]:
    """``run_id`` and every run below it."""
    parent_of = {rid: r["parent_run_id"] for rid, r in root.engine.children.items()}
    found = {run_id}
    changed = True
    while changed:
        changed = False
        for rid, parent in parent_of.items():
            if parent in found and rid not in found:
                found.add(rid)
                changed = True
    return found


def latest_metadata(root: Head, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``StaleResumeTarget.latest`` carries: where the run (or tree) stands now."""
    run = run or root_summary(root)
    return {
        "thread_id": run["thread_id"],
        "root_thread_id": root.thread_id,
        "run_id": run["run_id"],
        "checkpoint_id": run["checkpoint_id"],
        "status": run["status"],
        "interrupts": [i for i in run["interrupts"] if i["id"] not in root.engine.answers],
    }


def as_interrupts(records: list[dict[str, Any]]) -> list[Interrupt]:
    return [Interrupt.from_dict(r) for r in records]


def as_nodes(root: Head) -> list[RunNode]:
    return [
        RunNode(
            run_id=r["run_id"],
            thread_id=r["thread_id"],
            namespace=list(r["namespace"]),
            sub_agent_id=r["sub_agent_id"],
            parent_run_id=r["parent_run_id"],
            status=r["status"],
            checkpoint_id=r["checkpoint_id"],
            interrupts=as_interrupts(r["interrupts"]),
        )
        for r in runs(root)
    ]
