"""Values that cross the runtime's public surface: frozen, slotted, JSON-friendly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

END: Final = "__end__"
"""Returned by a route to finish the run."""

RunStatus = Literal["running", "interrupted", "completed", "cancelled", "failed"]
InterruptKind = Literal["node", "before", "after"]
ChildPolicy = Literal["leave", "cancel"]
Durability = Literal["sync", "exit"]
"""When a run is saved: after every step, or only at pauses, side effects and the end."""
SyncNodes = Literal["auto", "thread"]
"""Where sync nodes run: inline when alone in their step, or always in a worker thread."""
Route = Callable[..., Any]
"""``route(output)`` or ``route(output, ctx)``: the next node's name, a list of names, or
``END``."""


@dataclass(frozen=True, slots=True)
class Interrupt:
    """One pending pause somewhere in a run tree."""

    id: str
    node: str
    task_id: str
    payload: Any
    order: int
    namespace: list[str]
    run_id: str
    sub_agent_id: str | None
    checkpoint_id: str
    thread_id: str = ""
    kind: InterruptKind = "node"
    created_at: int = 0
    deadline_at: int | None = None
    has_default: bool = False
    default: Any = None
    assignees: dict[str, list[str]] | None = None  # who may answer; None: any reviewer
    summary_fields: list[str] | None = None  # payload keys its one-line summary shows
    sensitive: list[str] | None = None  # payload keys shown only to who may answer

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interrupt:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class Command:
    """How to resume: one answer, answers by interrupt id, and/or a steering note.

    ``metadata`` travels with the answer (say who approved it) without being part of the
    value: the node reads it as ``ctx.answer_metadata()``.
    """

    resume: Any = None
    resume_map: dict[str, Any] | None = None
    steering: str | None = None
    expected_checkpoint_id: str | None = None
    child_policy: ChildPolicy = "leave"
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ResumeTarget:
    """Names one run of a tree, optionally narrowed to a task or an interrupt."""

    run_id: str
    task_id: str | None = None
    interrupt_id: str | None = None
    namespace: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RunResult:
    """What ``run`` / ``resume`` return: where the root run stands now."""

    thread_id: str
    run_id: str
    status: RunStatus
    interrupts: list[Interrupt]
    output: Any
    checkpoint_id: str

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"

    @property
    def interrupt_payload(self) -> Any:
        return self.interrupts[0].payload if self.interrupts else None


@dataclass(frozen=True, slots=True)
class RunNode:
    """One run of a tree, as ``DurableExecutor.get_tree`` reports it."""

    run_id: str
    thread_id: str
    namespace: list[str]
    sub_agent_id: str | None
    parent_run_id: str | None
    status: RunStatus
    checkpoint_id: str
    interrupts: list[Interrupt]
