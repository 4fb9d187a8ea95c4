"""Turning a resume, steer or cancel request into inbox entries on the root checkpoint.

Each function validates against the root checkpoint as loaded, then mutates it; the
caller saves it with a compare-and-set and retries from a fresh load on conflict.
"""

from __future__ import annotations

from typing import Any

from . import _tree
from ._ids import new_id, now_ms
from ._jsonvalue import NotJSON, json_copy
from .checkpoint import Head
from .errors import AmbiguousResume, ResumeError, StaleResumeTarget
from .types import Command, Interrupt, ResumeTarget

LIVE: frozenset[str] = frozenset({"running", "interrupted", "failed"})


def _target_run(root: Head, target: ResumeTarget) -> dict[str, Any]:
    run = _tree.find_run(root, target.run_id)
    if run is None:
        raise StaleResumeTarget(f"run {target.run_id!r} is not part of thread "
                                f"{root.thread_id!r}", _tree.latest_metadata(root))
    meta = _tree.latest_metadata(root, run)
    if target.namespace and list(target.namespace) != list(run["namespace"]):
        raise StaleResumeTarget(f"run {target.run_id!r} has namespace {run['namespace']}, "
                                f"not {list(target.namespace)}", meta)
    if run["status"] not in LIVE:
        raise StaleResumeTarget(f"run {target.run_id!r} is {run['status']}", meta)
    return run


def _candidates(root: Head, target: ResumeTarget | None,
                ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    open_ = _tree.open_interrupts(root)
    if target is None:
        return open_, _tree.latest_metadata(root)
    run = _target_run(root, target)
    meta = _tree.latest_metadata(root, run)
    found = [i for i in open_ if i["run_id"] == run["run_id"]]
    if target.task_id is not None:
        found = [i for i in found if i["task_id"] == target.task_id]
        if not found:
            raise StaleResumeTarget(f"task {target.task_id!r} has no pending interrupt", meta)
    if target.interrupt_id is not None:
        found = [i for i in found if i["id"] == target.interrupt_id]
        if not found:
            raise StaleResumeTarget(
                f"interrupt {target.interrupt_id!r} is not pending (unknown or answered)", meta)
    return found, meta


def _checked_value(value: Any) -> Any:
    try:
        return json_copy(value)
    except NotJSON as exc:
        raise ResumeError(f"resume value: {exc}") from None


def checked_metadata(metadata: Any, what: str) -> dict[str, Any] | None:
    """A copy of a run's or an answer's metadata (``what`` names which), proven JSON like
    everything else a checkpoint holds; None when there is none."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise ResumeError(f"{what} must be a dict, not {type(metadata).__name__}")
    try:
        copied: dict[str, Any] = json_copy(metadata)
    except NotJSON as exc:
        raise ResumeError(f"{what}: {exc}") from None
    return copied


def accept_answers(root: Head, target: ResumeTarget | None, command: Command) -> None:
    """Record the command's answers (and steering note) in ``root``, or raise."""
    candidates, meta = _candidates(root, target)
    expected = command.expected_checkpoint_id
    if expected is not None and expected not in (meta["checkpoint_id"], root.id):
        raise StaleResumeTarget(f"checkpoint {expected!r} is not the latest "
                                f"({meta['checkpoint_id']!r})", meta)
    if command.resume_map is not None:
        by_id = {i["id"]: i for i in candidates}
        unknown = [k for k in command.resume_map if k not in by_id]
        if unknown or not command.resume_map:
            raise StaleResumeTarget(f"interrupts not pending here: {unknown}", meta)
        chosen = [(by_id[k], v) for k, v in command.resume_map.items()]
    elif not candidates:
        raise StaleResumeTarget(f"nothing is waiting for an answer in thread "
                                f"{meta['thread_id']!r}", meta)
    elif len(candidates) > 1:
        raise AmbiguousResume(
            f"{len(candidates)} interrupts are pending; answer one by id (resume_map or "
            f"resume_targeted): {[i['id'] for i in candidates]}",
            [Interrupt.from_dict(i) for i in candidates])
    else:
        chosen = [(candidates[0], command.resume)]
    at = now_ms()
    recorded = checked_metadata(command.metadata, "answer metadata")
    for interrupt, value in chosen:
        entry: dict[str, Any] = {"value": _checked_value(value), "at": at,
                                 "run_id": interrupt["run_id"],
                                 "child_policy": command.child_policy}
        if recorded:
            entry["meta"] = recorded
        root.engine.answers[interrupt["id"]] = entry
    if command.steering:
        first = chosen[0][0]
        add_note(root, first["run_id"], command.steering, first["task_id"], first["id"])


def add_note(root: Head, run_id: str, text: str, task_id: str | None = None,
             interrupt_id: str | None = None) -> dict[str, Any]:
    run = _tree.find_run(root, run_id)
    note = {"id": new_id(), "run_id": run_id, "task_id": task_id, "interrupt_id": interrupt_id,
            "namespace": run["namespace"] if run else [], "text": str(text), "at": now_ms()}
    root.steering.append(note)
    return note


def accept_note(root: Head, target: ResumeTarget, text: str) -> dict[str, Any]:
    """Validate a steering target and record the note (no answer, nothing resumes)."""
    if not isinstance(text, str) or not text.strip():
        raise ResumeError("a steering note needs some text")
    task_id = target.task_id
    if task_id is not None or target.interrupt_id is not None:
        found, _ = _candidates(root, target)
        task_id = found[0]["task_id"]  # a note beside an interrupt reaches its task only
    else:
        _target_run(root, target)
    return add_note(root, target.run_id, text, task_id, target.interrupt_id)


def accept_cancel(root: Head, target: ResumeTarget | None) -> None:
    run = _target_run(root, target) if target else _tree.root_summary(root)
    if run["status"] not in LIVE:
        raise StaleResumeTarget(f"run {run['run_id']!r} is {run['status']}",
                                _tree.latest_metadata(root, run))
    if run["run_id"] not in root.engine.cancels:
        root.engine.cancels.append(run["run_id"])
