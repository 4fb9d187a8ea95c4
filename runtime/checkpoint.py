"""The checkpoint contract: the persisted record and the store protocol.

This module imports nothing from the executor; stores depend on it, never the reverse.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field, fields
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from ._jsonvalue import dumps_proven
from .errors import CheckpointConflict
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


class _GrowingField:
    """``history``, ``state`` and ``resolved``: built only when read.

    A checkpoint the executor works on carries no history, only what it added
    (``Checkpoint.additions``); a loaded one builds the rest from its store when first
    read. Reading one of them settles all three into plain values.
    """

    def __init__(self, default: tuple[()] | None = None) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Checkpoint | None, owner: type | None = None) -> Any:
        if obj is None:
            if self.default is None:
                raise AttributeError(self.slot)  # a required field, for the dataclass
            return self.default
        if obj.__dict__.get("_source") is not None or obj.additions is not None:
            obj.settle()
        return obj.__dict__[self.slot]

    def __set__(self, obj: Checkpoint, value: Any) -> None:
        if obj.__dict__.get("_source") is not None or obj.__dict__.get("additions"):
            obj.settle()
        obj.__dict__[self.slot] = list(value) if isinstance(value, tuple) else value
        obj.__dict__["additions"] = None  # set by hand: a store saves it whole


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


BOOKKEEPING: tuple[str, ...] = tuple(f.name for f in fields(RunBookkeeping))


@dataclass
class Checkpoint:
    """One saved point of one run's thread. Every field is JSON-serialisable.

    ``history``, ``state`` and ``resolved`` grow with the thread; a checkpoint loaded from
    a store builds them only when they are read, and the executor never reads them.
    ``engine`` holds the executor's internal records of the run (``RunBookkeeping``).
    """

    id: str
    thread_id: str
    node: str | None
    interrupt_payload: Any
    if TYPE_CHECKING:
        state: dict[str, Any]
        history: list[dict[str, Any]]
    else:
        state: dict = _GrowingField()
        history: list = _GrowingField()
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
    # This run's ended interrupts: the interrupt plus status, answer and when.
    if TYPE_CHECKING:
        resolved: list[dict[str, Any]] = field(default_factory=list)
    else:
        resolved: list = _GrowingField(())
    steering: list[dict[str, Any]] = field(default_factory=list)
    once: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    error: dict[str, Any] | None = None
    forked_from: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    engine: RunBookkeeping = field(default_factory=RunBookkeeping)

    def __post_init__(self) -> None:
        # Internal, not fields: what the executor added since the last save, the head
        # that save wrote (the base of the next record), and where the growing fields
        # come from when they are not plain values yet.
        self.additions: Additions | None = self.__dict__.get("additions")
        self._source: Callable[[], Growing] | None = None
        self.saved: Saved | None = None
        self.last_completed: dict[str, Any] | None = None
        # Where a store that numbers its threads put this checkpoint: (id, place from 1).
        self.position: tuple[str, int] | None = None

    @classmethod
    def with_growing(cls, fields: dict[str, Any],
                     growing: Growing | Callable[[], Growing]) -> Checkpoint:
        """A checkpoint from its stored ``fields`` (``FIELD_NAMES`` but the growing ones)
        whose growing fields are ``growing``, or built by it when read."""
        if callable(growing):
            cp = cls.from_stored(fields, state={}, history=[])
            cp._source = growing
        else:
            history, state, resolved = growing
            cp = cls.from_stored(fields, state=state, history=history, resolved=resolved)
        cp.additions = Additions()
        return cp

    def settle(self) -> None:
        """Make the growing fields plain values (the store's, plus what was added)."""
        source, additions = self._source, self.__dict__.get("additions")
        self._source = None
        self.__dict__["additions"] = None
        if source is not None:
            history, state, resolved = source()
        else:
            history = self.__dict__["_history"]
            state, resolved = self.__dict__["_state"], self.__dict__["_resolved"]
        if additions is not None:
            if additions.reset:
                history, state, resolved = [], {}, []
            history, state, resolved = list(history), dict(state), list(resolved)
            for entry in additions.history:
                history.append({k: v for k, v in entry.items() if k != "task_id"})
                if not entry.get("cancelled"):
                    state[entry["node"]] = entry["output"]
            resolved.extend(additions.resolved)
        self.__dict__.update(_history=history, _state=state, _resolved=resolved)

    def add_history(self, entry: dict[str, Any]) -> None:
        """A task completed (``output``) or was cancelled (``cancelled``)."""
        self.last_completed = {"node": entry["node"], "task_id": entry.get("task_id"),
                               "cancelled": bool(entry.get("cancelled"))}
        if self.additions is not None:
            self.additions.history.append(entry)
            return
        self.history.append({k: v for k, v in entry.items() if k != "task_id"})
        if not entry.get("cancelled"):
            self.state[entry["node"]] = entry["output"]

    def add_resolved(self, records: list[dict[str, Any]]) -> None:
        """Interrupts that ended (answered or cancelled)."""
        if self.additions is not None:
            self.additions.resolved.extend(records)
        else:
            self.resolved.extend(records)

    def mark_saved(self, source: Callable[[], Growing]) -> None:
        """A store saved this checkpoint: its growing fields are now ``source``'s."""
        self._source, self.additions = source, Additions()

    def growing_source(self) -> Callable[[], Growing]:
        """A function giving this checkpoint's growing fields, as they are now."""
        if self._source is not None and not self.additions:
            return self._source
        growing = (self.history, self.state, self.resolved)
        return lambda: growing

    def stored(self, name: str) -> Any:
        """The value stored under ``name``, one of ``FIELD_NAMES``."""
        return getattr(self.engine, name) if name in BOOKKEEPING else getattr(self, name)

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


# How a checkpoint is stored: flat, the executor's bookkeeping beside the rest, in this
# order (the heads already in databases were written so).
FIELD_NAMES: tuple[str, ...] = (
    "id", "thread_id", "node", "interrupt_payload", "state", "history", "pending_input",
    "created_at", "run_id", "parent_id", "namespace", "status", "step", "graph",
    "root_thread_id", "parent_run_id", "parent_thread_id", "sub_agent_id", "tasks",
    "interrupts", "resolved", "answers", "cancels", "steering", "once", "output", "error",
    "forked_from", "children", "lease", "metadata",
)


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Every backend passes ``tests/runtime/test_store_conformance``."""

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
class BlockingStore(Protocol):
    """A store whose database calls block a thread of its own (``DjangoCheckpointStore``).

    Optional, beside ``CheckpointStore``. The executor runs a chain of lone sync steps on
    that thread with the blocking twins below, saving after each step as always, so the
    chain costs one trip from the event loop instead of one per save. The twins may be
    called only there (``call_in_store_thread``), or on a sync caller's thread that
    ``can_block_here`` allows.
    """

    def save_sync(self, cp: Checkpoint) -> None:
        """``save``, blocking."""

    def load_sync(self, thread_id: str) -> Checkpoint | None:
        """``load``, blocking."""

    def load_run_sync(self, run_id: str) -> Checkpoint | None:
        """``load_run``, blocking."""

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


_blocking_types: dict[type, bool] = {}


def as_blocking(store: object) -> BlockingStore | None:
    """``store`` if it is a ``BlockingStore``, else None (decided once per type: a
    protocol ``isinstance`` checks every member, and this runs on every save)."""
    kind = type(store)
    blocking = _blocking_types.get(kind)
    if blocking is None:
        blocking = _blocking_types[kind] = isinstance(store, BlockingStore)
    return store if blocking else None  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class LoadLatest:
    """A store call a dialogue asks for: ``load(thread_id)``."""

    thread_id: str


@dataclass(frozen=True, slots=True)
class SaveNext:
    """A store call a dialogue asks for: ``save(checkpoint)``."""

    checkpoint: Checkpoint


# Store work written once for sync and async callers: the generator yields the calls it
# needs, gets each call's result sent back (a conflict thrown back in), and returns its
# answer; ``converse`` and ``converse_blocking`` are the two thin drivers.
StoreDialogue = Generator[LoadLatest | SaveNext, Checkpoint | None, T]


async def converse(store: CheckpointStore, dialogue: StoreDialogue[T]) -> T:
    """Carry out ``dialogue`` with ``store``'s async calls."""
    reply: Checkpoint | None = None
    conflict: CheckpointConflict | None = None
    while True:
        try:
            call = dialogue.send(reply) if conflict is None else dialogue.throw(conflict)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        reply, conflict = None, None
        try:
            if isinstance(call, LoadLatest):
                reply = await store.load(call.thread_id)
            else:
                await store.save(call.checkpoint)
        except CheckpointConflict as exc:
            conflict = exc


def converse_blocking(store: BlockingStore, dialogue: StoreDialogue[T]) -> T:
    """Carry out ``dialogue`` with ``store``'s blocking twins, on a thread that may."""
    reply: Checkpoint | None = None
    conflict: CheckpointConflict | None = None
    while True:
        try:
            call = dialogue.send(reply) if conflict is None else dialogue.throw(conflict)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        reply, conflict = None, None
        try:
            if isinstance(call, LoadLatest):
                reply = store.load_sync(call.thread_id)
            else:
                store.save_sync(call.checkpoint)
        except CheckpointConflict as exc:
            conflict = exc


Change = Callable[[Checkpoint | None], Checkpoint]


def _latest_changed(thread_id: str, change: Change) -> StoreDialogue[Checkpoint]:
    """Save ``change(latest)`` as the thread's next checkpoint, retrying from the new
    latest on ``CheckpointConflict``; the checkpoint saved."""
    while True:
        cp = change((yield LoadLatest(thread_id)))
        try:
            yield SaveNext(cp)
        except CheckpointConflict:
            continue
        return cp


async def update_latest(store: CheckpointStore, thread_id: str, change: Change) -> Checkpoint:
    """Save ``change(latest)`` as the thread's next checkpoint, retrying from the new latest
    on ``CheckpointConflict``; the checkpoint saved.

    ``change`` is plain, fast code (it runs on the store's own thread when the store is a
    ``BlockingStore``: then the whole loop is one trip there) and gets a fresh checkpoint
    each try.
    """
    blocking = as_blocking(store)
    if blocking is not None:
        return await blocking.call_in_store_thread(
            partial(update_latest_blocking, blocking, thread_id, change))
    return await converse(store, _latest_changed(thread_id, change))


def update_latest_blocking(store: BlockingStore, thread_id: str,
                           change: Change) -> Checkpoint:
    """``update_latest`` with a ``BlockingStore``'s blocking twins, on its thread."""
    return converse_blocking(store, _latest_changed(thread_id, change))
