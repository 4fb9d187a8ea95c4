"""``DurableExecutor``: build a graph, run it, pause it, answer it, fork it."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from . import _tree
from ._accept import accept_answers, accept_cancel, accept_note
from ._engine import FINISHED, Durability, RunExecution, Shared, SyncNodes, new_task
from ._fork import fork_tree
from ._graph import Graph, Route
from ._ids import new_id, now_ms
from ._jsonvalue import NotJSON, json_copy
from .checkpoint import (
    Checkpoint,
    CheckpointStore,
    as_blocking,
    update_latest,
    update_latest_blocking,
)
from .errors import ForgeError, NodeError, ResumeError, StaleResumeTarget
from .stores.memory import InMemoryCheckpointStore
from .types import Command, ResumeTarget, RunNode, RunResult

T = TypeVar("T")
_DEFAULT_STORE: Any = object()


def _as_command(value: Any) -> Command:
    return value if isinstance(value, Command) else Command(resume=value)


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ForgeError("the *_sync methods are for code without a running event loop; await "
                     "the async method instead")


class DurableExecutor:
    """A graph of nodes whose runs survive pauses, crashes and people.

    ``nodes`` is an ordered list of ``(name, node)``; a node is ``fn(input)`` or
    ``fn(input, ctx)``, sync or async, or another ``DurableExecutor`` (a sub-agent).
    ``edges`` maps a node name to ``route(output[, ctx])`` returning the next node name,
    a list of names (parallel tasks) or ``END``. ``durability="sync"`` saves after every
    step; ``"exit"`` only at pauses, side effects and the end. Sync nodes run inline when
    alone in their step and in threads when parallel; ``sync_nodes="thread"`` always uses
    a thread (for nodes that block the loop or use Django's ORM). With a ``BlockingStore``
    a lone sync node runs on the store's thread, between its step's saves.
    """

    def __init__(
        self,
        nodes: Sequence[tuple[str, Any]],
        edges: dict[str, Route] | None = None,
        store: CheckpointStore | None = _DEFAULT_STORE,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
        name: str = "graph",
        durability: Durability = "sync",
        sync_nodes: SyncNodes = "auto",
    ) -> None:
        if durability not in ("sync", "exit"):
            raise ValueError(f"durability must be 'sync' or 'exit', not {durability!r}")
        if sync_nodes not in ("auto", "thread"):
            raise ValueError(f"sync_nodes must be 'auto' or 'thread', not {sync_nodes!r}")
        self.graph = Graph(nodes, edges, interrupt_before, interrupt_after)
        self.store: CheckpointStore | None = (
            InMemoryCheckpointStore() if store is _DEFAULT_STORE else store)
        self.name = name
        self.durability: Durability = durability
        self.sync_nodes: SyncNodes = sync_nodes

    def with_store(self, store: CheckpointStore | None,
                   sync_nodes: SyncNodes | None = None) -> DurableExecutor:
        """The same graph on another store (the dashboard binds graphs to its ORM store)."""
        clone = copy.copy(self)
        clone.store = store
        clone.sync_nodes = sync_nodes or self.sync_nodes
        return clone

    # -- starting -------------------------------------------------------------------

    async def run(self, input: Any, thread_id: str | None = None, *,
                  metadata: dict[str, Any] | None = None, run_id: str | None = None,
                  ) -> RunResult:
        """Start a run on ``thread_id`` (a new thread when None) and drive it.

        ``run_id`` lets a caller that queues the run hand out its id before it starts.
        """
        try:
            input = json_copy(input)
        except NotJSON as exc:
            raise NodeError(self.graph.first, "", f"run input: {exc}") from None
        # A thread id made here is new: nothing to load (one round trip less per start).
        existing = (await self.store.load(thread_id)
                    if self.store is not None and thread_id is not None else None)
        thread_id = thread_id or new_id()
        if existing is not None and existing.status not in FINISHED:
            raise ResumeError(f"thread {thread_id!r} has a {existing.status} run; resume, "
                              f"recover or cancel it before starting another")
        if existing is not None and existing.parent_run_id is not None:
            raise ResumeError(f"thread {thread_id!r} belongs to a sub-agent")
        if run_id is not None and self.store is not None and await self.store.load_run(run_id):
            raise ResumeError(f"run id {run_id!r} is already taken")
        run_id = run_id or new_id()
        cp = Checkpoint(
            id="", thread_id=thread_id, node=None, interrupt_payload=None, state={},
            history=[], pending_input=None, created_at=now_ms(), run_id=run_id,
            namespace=[self.name], graph=self.name, root_thread_id=thread_id,
            tasks=[new_task(run_id, 0, self.graph.first, input)], lease=new_id(),
            once=dict(existing.once) if existing else {}, metadata=dict(metadata or {}),
        )
        execution = RunExecution(self, cp, Shared.from_root(cp, self),
                                 existing.id if existing else None)
        await execution.drive(save_first=self.durability == "sync")
        return self._result(execution.cp)

    # -- answering ------------------------------------------------------------------

    async def resume(self, thread_id: str, value_or_command: Any) -> RunResult:
        """Answer the thread's one pending interrupt (or several with ``resume_map``)."""
        command = _as_command(value_or_command)
        try:
            # A root thread (the usual case): read, accept and claim in one store update.
            return await self._submit(thread_id, lambda root: accept_answers(root, None, command),
                                      root_only=True)
        except _SubAgentThread as sub:
            target = ResumeTarget(sub.checkpoint.run_id)
            return await self._submit(sub.checkpoint.root_thread_id,
                                      lambda root: accept_answers(root, target, command))

    async def resume_targeted(self, target: ResumeTarget, command: Any = None) -> RunResult:
        """Answer one pending interrupt anywhere in the tree, leaving its siblings paused."""
        command = _as_command(command)
        root_thread = await self._root_thread_of_run(target.run_id)
        return await self._submit(root_thread, lambda root: accept_answers(root, target, command))

    async def steer(self, target: ResumeTarget, text: str) -> dict[str, Any]:
        """Record a steering note for one run; nodes read it as ``ctx.steering``."""
        root_thread = await self._root_thread_of_run(target.run_id)
        notes: list[dict[str, Any]] = []
        await self._submit(root_thread, lambda root: notes.append(accept_note(root, target, text)),
                           drive=False)
        return notes[-1]

    async def cancel(self, target: str | ResumeTarget) -> RunResult:
        """Cancel a root run (by thread id) or one sub-agent run and all below it."""
        if isinstance(target, str):
            cp = await self._load_thread(target)
            run_target = ResumeTarget(cp.run_id) if cp.parent_run_id is not None else None
            root_thread = cp.root_thread_id
        else:
            run_target, root_thread = target, await self._root_thread_of_run(target.run_id)
        return await self._submit(root_thread, lambda root: accept_cancel(root, run_target))

    async def recover(self, thread_id: str) -> RunResult:
        """Go on with a run whose executor died (``running``) or whose node failed."""
        def take_over(root: Checkpoint) -> None:
            if root.status in ("running", "failed"):
                root.error = None
                root.lease = None  # the old holder is gone: _submit takes a new lease
            elif root.status == "interrupted" and not root.answers and not root.cancels:
                raise _NothingToDo

        try:
            return await self._submit(thread_id, take_over)
        except _NothingToDo:
            return await self.get_state(thread_id)

    async def _submit(self, root_thread: str, accept: Callable[[Checkpoint], Any],
                      drive: bool = True, root_only: bool = False) -> RunResult:
        """Record a request on the root with a compare-and-set; apply it if nobody is.

        ``root_only``: raise ``_SubAgentThread`` if ``root_thread`` is a sub-agent's.
        """
        take_lease = False

        def claim(root: Checkpoint | None) -> Checkpoint:
            nonlocal take_lease
            if root is None:
                raise StaleResumeTarget(f"thread {root_thread!r} has no checkpoint",
                                        {"thread_id": root_thread, "run_id": None,
                                         "checkpoint_id": None, "status": None,
                                         "interrupts": []})
            if root_only and root.parent_run_id is not None:
                raise _SubAgentThread(root)
            accept(root)
            take_lease = drive and (root.status != "running" or root.lease is None)
            if take_lease:
                root.status, root.lease = "running", new_id()
            root.parent_id, root.id, root.created_at = root.id, new_id(), now_ms()
            return root

        store = self._require_store()
        blocking = as_blocking(store)
        loop = asyncio.get_running_loop()

        def claim_and_begin() -> tuple[Checkpoint, RunExecution | None, NodeError | bool]:
            """On the store's thread: claim, then go on as far as lone sync steps reach."""
            assert blocking is not None
            root = update_latest_blocking(blocking, root_thread, claim)
            if not take_lease:
                return root, None, False
            execution = RunExecution(self, root, Shared.from_root(root, self, loop), root.id)
            return root, execution, execution.drive_on_store_thread()

        if blocking is not None and drive:
            root, execution, begun = await blocking.call_in_store_thread(claim_and_begin)
        else:
            root, begun = await update_latest(store, root_thread, claim), False
            execution = (RunExecution(self, root, Shared.from_root(root, self), root.id)
                         if take_lease else None)
        if execution is None:
            return self._result(root)
        await execution.drive(begun=begun)
        return self._result(execution.cp)

    # -- reading and forking --------------------------------------------------------

    async def fork(self, thread_id: str, checkpoint_id: str | None = None) -> str:
        """Copy the thread as of its latest (or any earlier) checkpoint into a new thread."""
        store = self._require_store()
        src = await (store.load_by_id(checkpoint_id) if checkpoint_id else store.load(thread_id))
        if src is None or src.thread_id != thread_id:
            raise StaleResumeTarget(f"no checkpoint {checkpoint_id or '(latest)'} in thread "
                                    f"{thread_id!r}", {"thread_id": thread_id})
        if src.parent_run_id is not None:
            raise ResumeError(f"thread {thread_id!r} belongs to a sub-agent; fork its root "
                              f"thread {src.root_thread_id!r}")
        return await fork_tree(store, src)

    async def get_state(self, thread_id: str) -> RunResult:
        """Where the thread's root run stands, without changing anything."""
        cp = await self._load_thread(thread_id)
        if cp.root_thread_id != cp.thread_id:
            cp = await self._load_thread(cp.root_thread_id)
        return self._result(cp)

    async def get_tree(self, thread_id: str) -> list[RunNode]:
        """Every run of the thread's tree: namespace, status, checkpoint, interrupts."""
        cp = await self._load_thread(thread_id)
        if cp.root_thread_id != cp.thread_id:
            cp = await self._load_thread(cp.root_thread_id)
        return _tree.as_nodes(cp)

    # -- sync twins, for scripts and sync views -------------------------------------

    def run_sync(self, input: Any, thread_id: str | None = None, **kw: Any) -> RunResult:
        return _run_sync(self.run(input, thread_id, **kw))

    def resume_sync(self, thread_id: str, value_or_command: Any) -> RunResult:
        return _run_sync(self.resume(thread_id, value_or_command))

    def resume_targeted_sync(self, target: ResumeTarget, command: Any = None) -> RunResult:
        return _run_sync(self.resume_targeted(target, command))

    def fork_sync(self, thread_id: str, checkpoint_id: str | None = None) -> str:
        return _run_sync(self.fork(thread_id, checkpoint_id))

    def steer_sync(self, target: ResumeTarget, text: str) -> dict[str, Any]:
        return _run_sync(self.steer(target, text))

    def cancel_sync(self, target: str | ResumeTarget) -> RunResult:
        return _run_sync(self.cancel(target))

    def recover_sync(self, thread_id: str) -> RunResult:
        return _run_sync(self.recover(thread_id))

    # -- helpers --------------------------------------------------------------------

    def _require_store(self) -> CheckpointStore:
        if self.store is None:
            raise ResumeError("interrupts require a checkpoint store and a thread id")
        return self.store

    async def _load_thread(self, thread_id: str) -> Checkpoint:
        cp = await self._require_store().load(thread_id)
        if cp is None:
            raise StaleResumeTarget(f"thread {thread_id!r} has no checkpoint",
                                    {"thread_id": thread_id, "run_id": None,
                                     "checkpoint_id": None, "status": None, "interrupts": []})
        return cp

    async def _root_thread_of_run(self, run_id: str) -> str:
        cp = await self._require_store().load_run(run_id)
        if cp is None:
            raise StaleResumeTarget(f"run {run_id!r} is unknown",
                                    {"thread_id": None, "run_id": run_id, "checkpoint_id": None,
                                     "status": None, "interrupts": []})
        return cp.root_thread_id

    @staticmethod
    def _result(root: Checkpoint) -> RunResult:
        return RunResult(
            thread_id=root.thread_id,
            run_id=root.run_id,
            status=root.status,
            interrupts=_tree.as_interrupts(_tree.pending(root)),
            output=root.output if root.status == "completed" else None,
            checkpoint_id=root.id,
        )


class _SubAgentThread(Exception):
    """resume() was given a sub-agent's thread: answer through its root instead."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        super().__init__(checkpoint.thread_id)
        self.checkpoint = checkpoint


class _NothingToDo(Exception):
    """recover() found a run that is simply waiting for people."""
