"""``DurableExecutor``: build a graph, run it, pause it, answer it, fork it."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from . import _tree
from ._accept import accept_cancel, accept_note
from ._engine import RunExecution, TreeState
from ._fork import fork_tree
from ._graph import Graph
from ._ids import new_id
from ._jsonvalue import NotJSON, json_copy
from ._requests import (
    NothingToDo,
    Request,
    SubAgentThread,
    answer,
    answer_sub_agent,
    as_command,
    first_head,
    no_checkpoint,
    take_over,
    unknown_run,
)
from ._store_calls import update_latest, update_latest_blocking
from ._whole_stores import heads_of
from .checkpoint import (
    BlockingStore,
    CheckpointStore,
    Draft,
    Head,
    HeadStore,
    as_blocking,
    run_from_sync,
)
from .errors import ForgeError, NodeError, ResumeError, StaleResumeTarget
from .stores.memory import InMemoryCheckpointStore
from .types import (
    Durability,
    ResumeTarget,
    Route,
    RunNode,
    RunResult,
    SyncNodes,
)

T = TypeVar("T")
_DEFAULT_STORE: Any = object()


@dataclass(frozen=True, slots=True)
class GraphShape:
    """A read-only outline of an executor's graph (``DurableExecutor.shape``)."""

    nodes: tuple[str, ...]  # in the order given, which is also the default flow
    routed: tuple[str, ...]  # nodes whose successors a route chooses, as given
    sub_agents: Mapping[str, DurableExecutor]  # nodes that run as child runs


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

    # What ``fork`` can change at the copy: a paused node's input, and pre-filled answers.
    fork_edits: tuple[str, ...] = ("inputs", "answers")

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
        input_schema: dict[str, Any] | None = None,
    ) -> None:
        if durability not in ("sync", "exit"):
            raise ValueError(f"durability must be 'sync' or 'exit', not {durability!r}")
        if sync_nodes not in ("auto", "thread"):
            raise ValueError(f"sync_nodes must be 'auto' or 'thread', not {sync_nodes!r}")
        sub_agents = {name: node for name, node in nodes if isinstance(node, DurableExecutor)}
        self._graph: Graph = Graph(nodes, edges, interrupt_before, interrupt_after,
                                   {name: agent._graph for name, agent in sub_agents.items()})
        self._sub_agents = sub_agents
        self.store: CheckpointStore | None = (
            InMemoryCheckpointStore() if store is _DEFAULT_STORE else store)
        self.name = name
        self.durability: Durability = durability
        self.sync_nodes: SyncNodes = sync_nodes
        # JSON Schema of the run's input: the runtime keeps it for tools (the dashboard
        # builds its start form from it and checks inputs against it); it never checks.
        self.input_schema = input_schema

    @property
    def shape(self) -> GraphShape:
        """The graph's nodes, which of them route and which are sub-agents (to draw it)."""
        return GraphShape(tuple(self._graph.order), tuple(self._graph.edges),
                          dict(self._sub_agents))

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
        input = self._run_input(input)
        # A thread id made here is new: nothing to load (one round trip less per start).
        heads = heads_of(self.store) if self.store is not None else None
        existing = (await heads.load_head(thread_id)
                    if heads is not None and thread_id is not None else None)
        taken = (run_id is not None and heads is not None
                 and await heads.load_run_head(run_id) is not None)
        execution = self._new_run(input, thread_id, existing, run_id, taken, metadata,
                                  asyncio.get_running_loop())
        await execution.drive(save_first=self.durability == "sync")
        return self._result(execution.cp)

    def _run_input(self, input: Any) -> Any:
        try:
            return json_copy(input)
        except NotJSON as exc:
            raise NodeError(self._graph.first, "", f"run input: {exc}") from None

    def _new_run(self, input: Any, thread_id: str | None, existing: Draft | None,
                 run_id: str | None, taken: bool, metadata: dict[str, Any] | None,
                 loop: asyncio.AbstractEventLoop | None) -> RunExecution:
        """The execution of a new run, once the thread's latest checkpoint (``existing``)
        and whether ``run_id`` is ``taken`` are known."""
        cp = first_head(self.name, self._graph.first, input, thread_id or new_id(),
                        existing, run_id, taken, metadata)
        return RunExecution(self._graph, cp, self._tree_state(cp, loop),
                            existing.id if existing else None)

    # -- answering ------------------------------------------------------------------

    async def resume(self, thread_id: str, value_or_command: Any) -> RunResult:
        """Answer the thread's one pending interrupt (or several with ``resume_map``)."""
        command = as_command(value_or_command)
        try:
            # A root thread (the usual case): read, accept and take the lease in one update.
            return await self._submit(answer(thread_id, None, command, root_only=True))
        except SubAgentThread as sub:
            return await self._submit(answer_sub_agent(sub, command))

    async def resume_targeted(self, target: ResumeTarget, command: Any = None) -> RunResult:
        """Answer one pending interrupt anywhere in the tree, leaving its siblings paused."""
        command = as_command(command)
        root_thread = await self._root_thread_of_run(target.run_id)
        return await self._submit(answer(root_thread, target, command))

    async def steer(self, target: ResumeTarget, text: str) -> dict[str, Any]:
        """Record a steering note for one run; nodes read it as ``ctx.steering``."""
        root_thread = await self._root_thread_of_run(target.run_id)
        request = Request(root_thread, lambda root: accept_note(root, target, text), drive=False)
        await self._submit(request)
        return request.accepted  # type: ignore[no-any-return]

    async def cancel(self, target: str | ResumeTarget) -> RunResult:
        """Cancel a root run (by thread id) or one sub-agent run and all below it."""
        if isinstance(target, str):
            cp = await self._load_thread(target)
            run_target = ResumeTarget(cp.run_id) if cp.parent_run_id is not None else None
            root_thread = cp.root_thread_id
        else:
            run_target, root_thread = target, await self._root_thread_of_run(target.run_id)
        return await self._submit(
            Request(root_thread, lambda root: accept_cancel(root, run_target)))

    async def recover(self, thread_id: str) -> RunResult:
        """Go on with a run whose executor died (``running``) or whose node failed."""
        try:
            return await self._submit(Request(thread_id, take_over))
        except NothingToDo:
            return await self.get_state(thread_id)

    async def _submit(self, request: Request) -> RunResult:
        """Record a request on the root with a compare-and-set; apply it if nobody is."""
        store = self._require_store()
        blocking = as_blocking(store)
        if blocking is not None and request.drive:
            root, execution, begun = await blocking.call_in_store_thread(partial(
                self._record_and_begin, blocking, request, asyncio.get_running_loop()))
        else:
            root, begun = await update_latest(store, request.root_thread, request), False
            execution = self._execution(root, request, asyncio.get_running_loop())
        if execution is None:
            return self._result(root)
        await execution.drive(begun=begun)
        return self._result(execution.cp)

    def _submit_here(self, blocking: BlockingStore, request: Request) -> RunResult:
        """``_submit`` for a sync caller that may block on the store (``_blocking_here``):
        record, then drive right here (``RunExecution.drive_here``)."""
        root = update_latest_blocking(blocking, request.root_thread, request)
        execution = self._execution(root, request, None)
        if execution is None:
            return self._result(root)
        execution.drive_here()
        return self._result(execution.cp)

    def _record_and_begin(self, blocking: BlockingStore, request: Request,
                          loop: asyncio.AbstractEventLoop,
                          ) -> tuple[Draft, RunExecution | None, NodeError | bool]:
        """On the store's thread: record the request, then go on as far as lone sync steps
        reach (``drive_on_store_thread``); the loop does the rest."""
        root = update_latest_blocking(blocking, request.root_thread, request)
        execution = self._execution(root, request, loop)
        return root, execution, execution is not None and execution.drive_on_store_thread()

    def _execution(self, root: Draft, request: Request,
                   loop: asyncio.AbstractEventLoop | None) -> RunExecution | None:
        """The execution that applies the tree, if ``request`` took its lease (else someone
        else is applying it, or the request was only a note)."""
        if not request.take_lease:
            return None
        return RunExecution(self._graph, root, self._tree_state(root, loop), root.id)

    def _tree_state(self, root: Draft, loop: asyncio.AbstractEventLoop | None) -> TreeState:
        heads = heads_of(self.store) if self.store is not None else None
        return TreeState.from_root(root, heads, self.durability, self.sync_nodes, loop)

    def _blocking_here(self) -> BlockingStore | None:
        """The store, if this sync caller may call its blocking twins on its own thread."""
        blocking = as_blocking(self.store)
        if blocking is None or _loop_running() or not blocking.can_block_here():
            return None
        return blocking

    # -- reading and forking --------------------------------------------------------

    async def fork(self, thread_id: str, checkpoint_id: str | None = None, *,
                   inputs: Mapping[str, Any] | None = None) -> str:
        """Copy the thread as of its latest (or any earlier) checkpoint into a new thread.

        ``inputs`` (edit-then-fork) maps interrupt ids pending at that checkpoint to a new
        input for the paused node: the copy is saved ``failed`` ("recover to go on"), and
        ``recover`` on the new thread runs that node again from the new input.
        """
        store = self._require_store()
        src = await (store.load_head_by_id(checkpoint_id) if checkpoint_id
                     else store.load_head(thread_id))
        if src is None or src.thread_id != thread_id:
            raise StaleResumeTarget(f"no checkpoint {checkpoint_id or '(latest)'} in thread "
                                    f"{thread_id!r}", {"thread_id": thread_id})
        if src.parent_run_id is not None:
            raise ResumeError(f"thread {thread_id!r} belongs to a sub-agent; fork its root "
                              f"thread {src.root_thread_id!r}")
        try:
            edited = {iid: json_copy(value) for iid, value in (inputs or {}).items()}
        except NotJSON as exc:
            raise ResumeError(f"a forked input must be JSON: {exc}") from None
        return await fork_tree(store, src, edited)

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

    # With a store that lets this thread block on it (``BlockingStore.can_block_here``),
    # lone sync steps run right here with no event loop, as LangGraph's ``invoke`` does;
    # an event loop starts only for what needs one (async nodes, parallel steps,
    # sub-agents). Otherwise each twin runs its async method to its end, under
    # ``asyncio.run`` or the store's own way (``SyncRunner``).

    def run_sync(self, input: Any, thread_id: str | None = None, *,
                 metadata: dict[str, Any] | None = None, run_id: str | None = None,
                 ) -> RunResult:
        blocking = self._blocking_here()
        if blocking is None:
            return self._run_to_end(self.run(input, thread_id, metadata=metadata, run_id=run_id))
        input = self._run_input(input)
        existing = blocking.load_head_sync(thread_id) if thread_id is not None else None
        taken = run_id is not None and blocking.load_run_head_sync(run_id) is not None
        execution = self._new_run(input, thread_id, existing, run_id, taken, metadata, None)
        execution.drive_here(save_first=self.durability == "sync")
        return self._result(execution.cp)

    def resume_sync(self, thread_id: str, value_or_command: Any) -> RunResult:
        blocking = self._blocking_here()
        if blocking is None:
            return self._run_to_end(self.resume(thread_id, value_or_command))
        command = as_command(value_or_command)
        try:
            return self._submit_here(blocking, answer(thread_id, None, command, root_only=True))
        except SubAgentThread as sub:
            return self._submit_here(blocking, answer_sub_agent(sub, command))

    def resume_targeted_sync(self, target: ResumeTarget, command: Any = None) -> RunResult:
        blocking = self._blocking_here()
        if blocking is None:
            return self._run_to_end(self.resume_targeted(target, command))
        root = blocking.load_run_head_sync(target.run_id)
        if root is None:
            raise unknown_run(target.run_id)
        return self._submit_here(blocking, answer(root.root_thread_id, target,
                                                   as_command(command)))

    def fork_sync(self, thread_id: str, checkpoint_id: str | None = None, *,
                  inputs: Mapping[str, Any] | None = None) -> str:
        return self._run_to_end(self.fork(thread_id, checkpoint_id, inputs=inputs))

    def steer_sync(self, target: ResumeTarget, text: str) -> dict[str, Any]:
        return self._run_to_end(self.steer(target, text))

    def cancel_sync(self, target: str | ResumeTarget) -> RunResult:
        return self._run_to_end(self.cancel(target))

    def recover_sync(self, thread_id: str) -> RunResult:
        return self._run_to_end(self.recover(thread_id))

    # -- helpers --------------------------------------------------------------------

    def _run_to_end(self, coro: Coroutine[Any, Any, T]) -> T:
        """A sync twin's async method, run to its end the store's way (``run_from_sync``)."""
        if not _loop_running():
            return run_from_sync(self.store, coro)
        coro.close()
        raise ForgeError("the *_sync methods are for code without a running event loop; "
                         "await the async method instead")

    def _require_store(self) -> HeadStore:
        """The store, as the executor goes on with runs: from heads (``heads_of``)."""
        if self.store is None:
            raise ResumeError("interrupts require a checkpoint store and a thread id")
        return heads_of(self.store)

    async def _load_thread(self, thread_id: str) -> Draft:
        cp = await self._require_store().load_head(thread_id)
        if cp is None:
            raise no_checkpoint(thread_id)
        return cp

    async def _root_thread_of_run(self, run_id: str) -> str:
        cp = await self._require_store().load_run_head(run_id)
        if cp is None:
            raise unknown_run(run_id)
        return cp.root_thread_id

    @staticmethod
    def _result(root: Head) -> RunResult:
        return RunResult(
            thread_id=root.thread_id,
            run_id=root.run_id,
            status=root.status,
            interrupts=_tree.as_interrupts(_tree.pending(root)),
            output=root.output if root.status == "completed" else None,
            checkpoint_id=root.id,
        )


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
