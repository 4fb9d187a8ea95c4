"""The one exception tree of the runtime.

::

    ForgeError                      root of everything the runtime raises on purpose
    ├── ResumeError                 a resume (or run) that cannot be carried out
    │   ├── StaleResumeTarget       the target is not, or no longer, pending
    │   └── AmbiguousResume         a bare value but several pending interrupts
    ├── CheckpointConflict          store.save lost its compare-and-set
    └── NodeError                   a node raised, or returned non-JSON

``InterruptSignal`` is not an error: it derives from ``BaseException`` and lives in
``runtime.signal`` so that ``except Exception`` in node code never swallows a pause.
"""

from __future__ import annotations

from typing import Any


class ForgeError(Exception):
    """Root of the runtime's exceptions."""


class ResumeError(ForgeError):
    """A run or resume that cannot be carried out as asked."""


class StaleResumeTarget(ResumeError):
    """The resume target is not (or no longer) pending.

    ``latest`` holds what a caller needs to recover: ``thread_id``, ``run_id``,
    ``checkpoint_id``, ``status`` and ``interrupts`` (the pending ones, as dicts).
    """

    def __init__(self, message: str, latest: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.latest: dict[str, Any] = latest or {}


class AmbiguousResume(ResumeError):
    """A bare resume value while several interrupts in different tasks are pending."""

    def __init__(self, message: str, pending: list[Any]) -> None:
        super().__init__(message)
        self.pending = pending


class CheckpointConflict(ForgeError):
    """``save`` refused: the checkpoint's parent is not the thread's latest."""

    def __init__(self, thread_id: str, expected_parent: str | None, latest: str | None) -> None:
        super().__init__(
            f"thread {thread_id!r} moved on: checkpoint based on {expected_parent!r}, "
            f"latest is {latest!r}"
        )
        self.thread_id = thread_id
        self.expected_parent = expected_parent
        self.latest = latest


class NodeError(ForgeError):
    """A node failed; the run keeps its last good checkpoint and can be retried."""

    def __init__(self, node: str, task_id: str, message: str) -> None:
        super().__init__(f"node {node!r} (task {task_id}) failed: {message}")
        self.node = node
        self.task_id = task_id
