"""forge runtime: a durable, human-in-the-loop graph executor. Pure Python, no Django.

Everything a graph's author or a store's author needs is importable from here; modules
whose names start with ``_`` are internal. ``InterruptSignal`` is exported so that code
which catches ``BaseException`` can let a pause through: nodes call ``ctx.interrupt``,
they never raise it themselves.
"""

from .checkpoint import (
    BlockingStore,
    Checkpoint,
    CheckpointStore,
    Draft,
    Growing,
    Head,
    HeadStore,
    SyncRunner,
)
from .context import NodeContext
from .errors import (
    AmbiguousResume,
    CheckpointConflict,
    ForgeError,
    NodeError,
    ResumeError,
    StaleResumeTarget,
)
from .executor import DurableExecutor, GraphShape
from .signal import InterruptSignal
from .store_kit import Lineage, RecordStore, Step, StoredHead
from .stores import InMemoryCheckpointStore
from .types import (
    END,
    ChildPolicy,
    Command,
    Durability,
    Interrupt,
    InterruptKind,
    ResumeTarget,
    Route,
    RunNode,
    RunResult,
    RunStatus,
    SyncNodes,
)

__all__ = [
    "END",
    "AmbiguousResume",
    "BlockingStore",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointStore",
    "ChildPolicy",
    "Command",
    "Draft",
    "Durability",
    "DurableExecutor",
    "ForgeError",
    "GraphShape",
    "Growing",
    "Head",
    "HeadStore",
    "InMemoryCheckpointStore",
    "Interrupt",
    "InterruptKind",
    "InterruptSignal",
    "Lineage",
    "NodeContext",
    "NodeError",
    "RecordStore",
    "ResumeError",
    "ResumeTarget",
    "Route",
    "RunNode",
    "RunResult",
    "RunStatus",
    "StaleResumeTarget",
    "Step",
    "StoredHead",
    "SyncNodes",
    "SyncRunner",
]
