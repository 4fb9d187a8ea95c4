"""forge runtime: a durable, human-in-the-loop graph executor. Pure Python, no Django."""

from .checkpoint import Checkpoint, CheckpointStore
from .context import NodeContext
from .errors import (
    AmbiguousResume,
    CheckpointConflict,
    ForgeError,
    NodeError,
    ResumeError,
    StaleResumeTarget,
)
from .executor import DurableExecutor
from .signal import InterruptSignal
from .stores import InMemoryCheckpointStore
from .types import END, Command, Interrupt, ResumeTarget, RunNode, RunResult

__all__ = [
    "END",
    "AmbiguousResume",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointStore",
    "Command",
    "DurableExecutor",
    "ForgeError",
    "InMemoryCheckpointStore",
    "Interrupt",
    "InterruptSignal",
    "NodeContext",
    "NodeError",
    "ResumeError",
    "ResumeTarget",
    "RunNode",
    "RunResult",
    "StaleResumeTarget",
]
