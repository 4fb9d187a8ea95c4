"""The checkpoint contract: the persisted record and the store protocol.

This module imports nothing from the executor; stores depend on it, never the reverse.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, fields
from itertools import product
from typing import Any, Protocol, TypeVar, runtime_checkable

from ._jsonvalue import dumps_proven
from .types import RunStatus

T = TypeVar("T")
# The error a fork with an edited input is saved with, so that recover drives it; nothing
# failed, and the dashboard says so.
REOPENED_BY_FORK = "forked with an edited input; recover to go on"


GROWING: tuple[str, ...] = ("history", "state", "resolved")
# A checkpoint's history, state and resolved, in that order.
Growing = tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]


@dataclass
class Additions:
    """What the executor added to a checkpoint's growing fields since its base was saved:
    history entries (with the ``task_id`` that made them) and ended interrupts.
    ``reset``: a new run on an old thread, whose history starts empty."""

    history: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    reset: bool = False

    def __bool__(self) -> bool:
        return bool(self.history or self.resolved or self.reset)


@dataclass(frozen=True, slots=True)
class Saved:
    """A head as it was saved (or loaded) as checkpoint ``id``, kept for the next save's
    record to be a patch against it: ``doc``, the head with each value kept once named by
    reference (the checkpoint's own copy, which nothing changes), and ``values``, what
    those references name (shared with the checkpoint, which never changes them)."""

    id: str
    doc: dict[str, Any]
    values: dict[str, Any]
    doc_text: str  # the JSON of ``doc``
    # Each value's JSON length, roughly, or -1 past SMALL_TEXT: taken once per value.
    sizes: dict[str, int]


@dataclass
class RunBookkeeping:
    """The executor's own records of a run, saved with each checkpoint. Internal: the
    executor and the stores read them, and their shape may change between versions.

    They are stored flat, beside the checkpoint's other fields (``FIELD_NAMES``).
    """

    # The current step's tasks: id, node, input, status, answers (by order), output...
    tasks: list[dict[str, Any]] = field(default_factory=list)
    # Accepted answers not yet applied, by interrupt id (kept on the root of a tree).
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Runs of the tree that a person asked to cancel, not yet applied (root only).
    cancels: list[str] = field(default_factory=list)
    # Every descendant run, by run id: thread, namespace, status, checkpoint, interrupts.
    children: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Which executor is applying this run right now (None when nobody is).
    lease: str | None = None
    # What the run has done, bounded by its graph rather than by its history, so a page
    # reads it from the head: each node's latest output (the ``state`` its history adds
    # up to) and the [node, next node] routes taken from one step to the next. None: a
    # head saved before heads kept them, or a checkpoint built by hand.
    outputs: dict[str, Any] | None = None
    routes: list[list[str]] | None = None

    def took(self, here: Iterable[str], after: Iterable[str]) -> None:
        """The step of the nodes ``here`` routed on to the nodes ``after``."""
        if self.routes is None:
            return
        for route in map(list, product(here, list(after))):
            if route not in self.routes:
                self.routes.append(route)


BOOKKEEPING: tuple[str, ...] = tuple(f.name for f in fields(RunBookkeeping))


@dataclass(kw_only=True)
class Head:
    """A checkpoint without its growing fields: what a run needs to go on from it. A
    plain value, as every field of ``Checkpoint`` is.

    ``engine`` holds the executor's internal records of the run (``RunBookkeeping``).
    """

    id: str
    thread_id: str
    node: str | None
    interrupt_payload: Any
    pending_input: Any
    created_at: int
    run_id: str = ""
    parent_id: str | None = None
    namespace: list[str] = field(default_factory=list)
    status: RunStatus = "running"
    step: int = 0
    graph: str = ""
    root_thread_id: str = ""
    parent_run_id: str | None = None
    parent_thread_id: str | None = None
    sub_agent_id: str | None = None
    # This run's own pending interrupts (Interrupt.to_dict()).
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    steering: list[dict[str, Any]] = field(default_factory=list)
    once: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    error: dict[str, Any] | None = None
    forked_from: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    engine: RunBookkeeping = field(default_factory=RunBookkeeping)

    def stored(self, name: str) -> Any:
        """The value stored under ``name``, one of ``FIELD_NAMES``."""
        return getattr(self.engine, name) if name in BOOKKEEPING else getattr(self, name)

    def head_fields(self) -> dict[str, Any]:
        """The head's fields by name, as ``Head(**fields)`` takes them (shared, not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(Head)}


@dataclass(kw_only=True)
class Checkpoint(Head):
    """One saved point of one run's thread: its head and what the thread accumulated up
    to it (``history``, ``state``, ``resolved``). Every field is a plain JSON value, so
    reading one never calls a store. ``position``: where its store put it in its thread
    (from 1), when the store numbers its threads."""

    # accumulated per-node outputs, by node name
    state: dict[str, Any]
    # [{"node": name, "output": ...}] in completion order
    history: list[dict[str, Any]]
    # This run's ended interrupts: the interrupt plus status, answer and when.
    resolved: list[dict[str, Any]] = field(default_factory=list)
    position: int | None = field(default=None, compare=False)

    @classmethod
    def from_stored(cls, values: dict[str, Any], **growing: Any) -> Checkpoint:
        """A checkpoint from values stored under ``FIELD_NAMES``; ``growing``: the growing
        fields, when ``values`` lacks them."""
        plain = {name: value for name, value in values.items() if name not in BOOKKEEPING}
        kept = {name: value for name, value in values.items() if name in BOOKKEEPING}
        return cls(**plain, **growing, engine=RunBookkeeping(**kept))

    def to_dict(self) -> dict[str, Any]:
        return {name: self.stored(name) for name in FIELD_NAMES}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        return cls.from_stored({name: data[name] for name in FIELD_NAMES if name in data})

    def to_json(self) -> str:
        return dumps_proven(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        return cls.from_dict(json.loads(text))


@dataclass(kw_only=True)
class Draft(Head):
    """The head of the checkpoint the executor is writing, with what a store needs to
    save it as one step: what the run added to the growing fields since ``saved`` (the
    head it last saved or loaded, which the next record patches), and the task that
    completed last. The executor's own; users hold ``Head`` and ``Checkpoint`` values.
    """

    additions: Additions = field(default_factory=Additions)
    saved: Saved | None = None
    # {"node", "task_id", "cancelled"} of the task completed last, kept with the head.
    last_completed: dict[str, Any] | None = None
    # Where a store that numbers its threads put checkpoint ``[0]``: ``[1]``, from 1.
    stored_at: tuple[str, int] | None = None

    def add_history(self, entry: dict[str, Any]) -> None:
        """A task completed (``output``) or was cancelled (``cancelled``)."""
        self.last_completed = {"node": entry["node"], "task_id": entry.get("task_id"),
                               "cancelled": bool(entry.get("cancelled"))}
        self.additions.history.append(entry)
        if self.engine.outputs is not None and not entry.get("cancelled"):
            self.engine.outputs[entry["node"]] = entry["output"]

    def add_resolved(self, records: list[dict[str, Any]]) -> None:
        """Interrupts that ended (answered or cancelled)."""
        self.additions.resolved.extend(records)


# How a checkpoint is stored: flat, the executor's bookkeeping beside the rest, in this
# order (the heads already in databases were written so).
FIELD_NAMES: tuple[str, ...] = (
    "id", "thread_id", "node", "interrupt_payload", "state", "history", "pending_input",
    "created_at", "run_id", "parent_id", "namespace", "status", "step", "graph",
    "root_thread_id", "parent_run_id", "parent_thread_id", "sub_agent_id", "tasks",
    "interrupts", "resolved", "answers", "cancels", "steering", "once", "output", "error",
    "forked_from", "children", "lease", "metadata", "outputs", "routes",
)


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every backend passes ``tests/runtime/store_conformance.py``."""

    async def save(self, cp: Checkpoint) -> None:
        """Append ``cp`` to its thread.

        A compare-and-set: raises ``CheckpointConflict`` unless ``cp.parent_id`` is the
        thread's latest checkpoint id (``None`` for a thread's first checkpoint).
        """

    async def load(self, thread_id: str) -> Checkpoint | None:
        """The thread's latest checkpoint, or None for an unknown thread."""

    async def load_by_id(self, checkpoint_id: str) -> Checkpoint | None:
        """One checkpoint by id, or None."""

    async def list(self, thread_id: str) -> list[Checkpoint]:
        """Every checkpoint of the thread, oldest first."""

    async def delete(self, thread_id: str) -> None:
        """Forget the thread and all its checkpoints."""

    async def load_run(self, run_id: str) -> Checkpoint | None:
        """The latest checkpoint of the run ``run_id`` (any thread), or None.

        Lets ``resume_targeted`` find a run's tree from nothing but its run id.
        """


@runtime_checkable
class HeadStore(Protocol):
    """How the executor goes on with runs: from heads, saving each step as what it added
    (``Draft``), never reading or writing a thread's whole history. The store kit's
    ``RecordStore`` is one; the executor adapts any other ``CheckpointStore``."""

    async def load_head(self, thread_id: str) -> Draft | None:
        """The thread's latest head, ready to go on from, or None."""

    async def load_head_by_id(self, checkpoint_id: str) -> Draft | None:
        """One checkpoint's head, ready to go on from (a fork's source), or None."""

    async def load_run_head(self, run_id: str) -> Draft | None:
        """The latest head of the run ``run_id`` (any thread), or None."""

    async def save_head(self, draft: Draft) -> None:
        """Append ``draft`` to its thread, a compare-and-set as ``CheckpointStore.save``."""


@runtime_checkable
class BlockingStore(Protocol):
    """A store whose database calls block a thread of its own (``DjangoCheckpointStore``).

    Optional, beside ``HeadStore``. The executor runs a chain of lone sync steps on
    that thread with the blocking twins below, saving after each step as always, so the
    chain costs one trip from the event loop instead of one per save. The twins may be
    called only there (``call_in_store_thread``), or on a sync caller's thread that
    ``can_block_here`` allows.
    """

    def save_head_sync(self, draft: Draft) -> None:
        """``save_head``, blocking."""

    def load_head_sync(self, thread_id: str) -> Draft | None:
        """``load_head``, blocking."""

    def load_run_head_sync(self, run_id: str) -> Draft | None:
        """``load_run_head``, blocking."""

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the thread where the blocking twins may be called."""

    def can_block_here(self) -> bool:
        """May the calling thread, which runs no event loop, call the blocking twins
        itself? Then the executor's ``*_sync`` methods run lone sync steps right there,
        with no event loop and no trip to another thread (as LangGraph's ``invoke``)."""


@runtime_checkable
class SyncRunner(Protocol):
    """A store that says how sync code runs a coroutine (optional, beside
    ``BlockingStore``), for the executor's ``*_sync`` methods when a run needs an event
    loop. ``DjangoCheckpointStore`` uses ``async_to_sync``, so the calls it sends to
    "its" thread from that loop come back to the waiting caller's thread."""

    def run_from_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to its end from sync code with no running event loop."""


def run_from_sync(store: object, coro: Coroutine[Any, Any, T]) -> T:
    """``coro``'s result, run the way ``store`` says (``SyncRunner``), else ``asyncio.run``."""
    if isinstance(store, SyncRunner):
        return store.run_from_sync(coro)
    return asyncio.run(coro)


_implements: dict[tuple[type, type], bool] = {}


def implements(store: object, protocol: type) -> bool:
    """``isinstance(store, protocol)``, decided once per type: a protocol ``isinstance``
    checks every member, and the executor asks on every save."""
    key = (type(store), protocol)
    found = _implements.get(key)
    if found is None:
        found = _implements[key] = isinstance(store, protocol)
    return found


def as_blocking(store: object) -> BlockingStore | None:
    """``store`` if it is a ``BlockingStore``, else None."""
    return store if implements(store, BlockingStore) else None  # type: ignore[return-value]
