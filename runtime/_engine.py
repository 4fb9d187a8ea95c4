"""Drives one run of a tree step by step, saving a checkpoint after each step.

A step is the set of tasks that run together. A task ends ``done``, ``interrupted``
(waiting for a person, or for its child run), ``cancelled``, or fails the run. Answers
reach tasks through the tree's inbox (``TreeState.inbox``), which the root checkpoint
persists; the executor that holds the tree's lease is the only one that applies them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn, TypeVar

from . import _tree
from ._graph import Graph, NodeSpec
from ._ids import interrupt_id, new_id, now_ms, task_id
from ._jsonvalue import NotJSON, json_clone, json_copy, json_copy_sharing
from ._lent import Lent, lend
from .checkpoint import (
    Additions,
    BlockingStore,
    Checkpoint,
    CheckpointStore,
    LoadLatest,
    RunBookkeeping,
    SaveNext,
    StoreDialogue,
    as_blocking,
    converse,
    converse_blocking,
    run_from_sync,
)
from .context import NodeContext
from .errors import CheckpointConflict, ForgeError, NodeError, ResumeError
from .signal import InterruptSignal
from .types import Durability, RunStatus, SyncNodes

T = TypeVar("T")
_SIDE_LOOP = ThreadPoolExecutor(max_workers=4, thread_name_prefix="forge-once")
FINISHED: frozenset[str] = frozenset({"completed", "cancelled"})


@dataclass
class TreeState:
    """What every run of one tree execution shares: store, lease and the inbox."""

    store: CheckpointStore | None
    lease: str
    durability: Durability
    sync_nodes: SyncNodes
    # The tree's event loop; None while a sync caller drives it with no loop (``drive_here``).
    loop: asyncio.AbstractEventLoop | None
    inbox: dict[str, dict[str, Any]] = field(default_factory=dict)
    cancels: set[str] = field(default_factory=set)
    steering: list[dict[str, Any]] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)

    def unapplied(self) -> dict[str, dict[str, Any]]:
        """Accepted answers no run of this execution has taken in yet."""
        if not self.consumed:
            return self.inbox
        return {k: v for k, v in self.inbox.items() if k not in self.consumed}

    @classmethod
    def from_root(cls, root: Checkpoint, store: CheckpointStore | None,
                  durability: Durability, sync_nodes: SyncNodes,
                  loop: asyncio.AbstractEventLoop | None) -> TreeState:
        """``loop``: the tree's event loop (None: a sync caller's, with no loop yet)."""
        return cls(
            store=store,
            lease=root.engine.lease or new_id(),
            durability=durability,
            sync_nodes=sync_nodes,
            loop=loop,
            inbox=dict(root.engine.answers),
            cancels=set(root.engine.cancels),
            steering=list(root.steering),
        )


def _waits_on_child(task: dict[str, Any]) -> bool:
    """The task is a sub-agent's, paused inside it (not at its own breakpoint)."""
    return "child_run_id" in task and "interrupt_id" not in task


def cancelled_output(node: str) -> dict[str, Any]:
    """What a cancelled node (a cancelled sub-agent, say) hands on as its output."""
    return {"cancelled": True, "node": node}


def new_task(run_id: str, step: int, node: str, task_input: Any) -> dict[str, Any]:
    return {"id": task_id(run_id, step, node), "node": node, "input": task_input,
            "status": "pending", "answers": []}


@dataclass(frozen=True, slots=True)
class RunTasks:
    """Run the step's pending tasks."""

    tasks: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class SaveRun:
    """Save the run as ``status``; a run saved ``interrupted`` or ``completed`` stops."""

    status: RunStatus


@dataclass(frozen=True, slots=True)
class FailRun:
    """Record ``error`` as the run's failure."""

    error: NodeError


@dataclass(frozen=True, slots=True)
class CancelRun:
    """Cancel the run and everything below it."""


@dataclass(frozen=True, slots=True)
class StopDriving:
    """Nothing to do until someone answers."""


Step = RunTasks | SaveRun | FailRun | CancelRun | StopDriving


class RunExecution:
    """One run (root or sub-agent) being applied; ``cp`` is its working checkpoint."""

    def __init__(self, graph: Graph, cp: Checkpoint, tree: TreeState,
                 base: str | None, parent: RunExecution | None = None) -> None:
        self.graph = graph
        self.cp = cp
        self.tree = tree
        self.base = base  # the thread's latest saved id: the parent of our next save
        self.parent = parent
        # Unsaved until the first save, so every execution saves before it returns:
        # the request that started it may wait for that save to reach the disk.
        self.dirty = True
        self._lock = asyncio.Lock()
        self._parallel = False  # several tasks in this step: sync nodes go to threads
        self._inline_sync_node = False
        self._on_store_thread = False  # a node is running in drive_on_store_thread
        self._blocking: BlockingStore | None = as_blocking(tree.store)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    # -- the loop -------------------------------------------------------------------
    # One state machine (``_next_step``) decides what the run does next; ``drive`` carries
    # its steps out on the event loop, ``drive_on_store_thread`` on a thread that may
    # block on the store, handing back to the loop what only the loop can do.

    def _next_step(self) -> Step:
        """What the run does next; routes to the next step's tasks when one has ended."""
        while True:
            if self.cp.run_id in self.tree.cancels and self.cp.status not in FINISHED:
                return CancelRun()
            self._apply_inbox()
            runnable = self._runnable()
            if runnable:
                return RunTasks(runnable)
            if any(t["status"] == "interrupted" for t in self.cp.engine.tasks):
                return SaveRun("interrupted") if self.dirty else StopDriving()
            failure = self._route()
            if failure is not None:
                return FailRun(failure)
            if not self.cp.engine.tasks:
                return SaveRun("completed")
            if self.tree.durability == "sync":
                return SaveRun("running")

    async def drive(self, save_first: bool = False,
                    begun: NodeError | bool = False) -> None:
        """Run tasks until the run completes, pauses, is cancelled or fails.

        ``save_first``: save the run as it stands before anything runs (a new run).
        ``begun``: what ``drive_on_store_thread`` returned, when the caller began there.
        """
        if self.tree.loop is None:  # a sync caller began with no loop (``drive_here``)
            self.tree.loop = asyncio.get_running_loop()
        if await self._stopped(begun):
            return
        if save_first and not self._fits_store_thread(self._runnable()):
            await self.save("running")
            save_first = False
        while True:
            match self._next_step():
                case RunTasks(tasks) if self._fits_store_thread(tasks):
                    assert self._blocking is not None
                    stop = await self._blocking.call_in_store_thread(
                        partial(self.drive_on_store_thread, save_first))
                    save_first = False
                    if await self._stopped(stop):
                        return
                case RunTasks(tasks):
                    await self._run_step_tasks(tasks)
                case SaveRun(status):
                    if await self.save(status) and status != "running":
                        return
                case FailRun(error):
                    await self._fail(error)
                case CancelRun():
                    await self._cancel_run()
                    return
                case StopDriving():
                    return

    def drive_here(self, save_first: bool = False) -> None:
        """``drive`` for a sync caller whose thread may block on the store
        (``BlockingStore.can_block_here``): lone sync steps run right here with no event
        loop; one starts only for the work that needs it (``run_from_sync``)."""
        begun = self.drive_on_store_thread(save_first)
        if begun is not True:
            run_from_sync(self.tree.store, self.drive(begun=begun))

    async def _stopped(self, stop: NodeError | bool) -> bool:
        """Act on ``drive_on_store_thread``'s outcome: True when the drive is over."""
        if isinstance(stop, NodeError):
            await self._fail(stop)
        return stop is True

    def drive_on_store_thread(self, save_first: bool = False) -> NodeError | bool:
        """``drive`` for a chain of lone sync steps, run on a ``BlockingStore``'s thread.

        Each step is saved before the next starts, exactly as ``drive`` does; only the
        trips between the event loop and the database thread are saved. Returns True when
        the run is saved paused or ended, the ``NodeError`` to record when a node or route
        failed, False at work the loop must do (a cancel, a sub-agent, an async node, a
        parallel step).
        """
        if save_first:
            self._save_here("running")
        while True:
            match self._next_step():
                case RunTasks(tasks) if self._fits_store_thread(tasks):
                    failure = self._run_here(tasks[0])
                    self.dirty = True
                    if failure is not None:
                        return failure
                case SaveRun(status):
                    if self._save_here(status) and status != "running":
                        return True
                case FailRun(error):
                    return error
                case StopDriving():
                    return True
                case _:
                    return False

    def _runnable(self) -> list[dict[str, Any]]:
        return [t for t in self.cp.engine.tasks if t["status"] == "pending"]

    def _fits_store_thread(self, runnable: list[dict[str, Any]]) -> bool:
        """One sync task, nothing else of the tree running: it may run on the store's
        thread, which, like a worker thread, may block and may use Django's ORM."""
        if self._blocking is None or len(runnable) != 1:
            return False
        if self.parent is not None and self.parent._parallel:
            return False
        spec = self.graph.nodes[runnable[0]["node"]]
        return spec.child is None and not spec.is_async

    async def _run_step_tasks(self, runnable: list[dict[str, Any]]) -> None:
        # Inside a parallel step of an ancestor, sync nodes must not block the shared loop.
        self._parallel = len(runnable) > 1 or (self.parent is not None and self.parent._parallel)
        if len(runnable) == 1:
            outcomes: list[Any] = [await self._guarded(runnable[0])]
        else:
            outcomes = await asyncio.gather(*(self._guarded(t) for t in runnable),
                                            return_exceptions=True)
            for outcome in outcomes:  # a lost lease or a missing store: stop the tree
                if isinstance(outcome, BaseException) and not isinstance(outcome, NodeError):
                    raise outcome
        self.dirty = True  # a once() save mid-step may have cleared it
        failures = [o for o in outcomes if isinstance(o, NodeError)]
        if failures:
            await self._fail(failures[0])

    async def _guarded(self, task: dict[str, Any]) -> NodeError | None:
        try:
            await self._run_task(task)
        except Exception as exc:
            return _node_error(task, exc)
        return None

    def _run_here(self, task: dict[str, Any]) -> NodeError | None:
        """``_guarded`` for one sync task on the store's thread."""
        self._parallel = False
        self._on_store_thread = True
        try:
            self._run_sync_task(task)
        except Exception as exc:
            return _node_error(task, exc)
        finally:
            self._on_store_thread = False
        return None

    async def _fail(self, error: NodeError) -> NoReturn:
        self.cp.error = {"node": error.node, "task_id": error.task_id, "message": str(error),
                         "at": now_ms()}
        await self.save("failed")
        raise error

    # -- tasks ----------------------------------------------------------------------

    async def _run_task(self, task: dict[str, Any]) -> None:
        spec = self.graph.nodes[task["node"]]
        if self._pauses_before(task):
            return
        if spec.child is not None:
            await self._run_child(task, spec)
            return
        ctx = NodeContext(self, task)
        lent = self._lend(task)
        try:
            output = await self._call(spec, self._given(task, lent), ctx)
        except InterruptSignal as signal:
            self._take_back(lent)
            self._pause(task, signal.payload, signal.order, "node", signal)
            return
        except BaseException:
            self._take_back(lent)
            raise
        self._settle(task, output, lent)

    def _run_sync_task(self, task: dict[str, Any]) -> None:
        """``_run_task`` for a sync node, called in the thread it is in."""
        spec = self.graph.nodes[task["node"]]
        if self._pauses_before(task):
            return
        ctx = NodeContext(self, task)
        lent = self._lend(task)
        try:
            output = spec.fn(*_node_args(spec, self._given(task, lent), ctx))
        except InterruptSignal as signal:
            self._take_back(lent)
            self._pause(task, signal.payload, signal.order, "node", signal)
            return
        except BaseException:
            self._take_back(lent)
            raise
        self._settle(task, output, lent)

    def _pauses_before(self, task: dict[str, Any]) -> bool:
        """Pause at an ``interrupt_before`` breakpoint not yet answered."""
        if task["node"] not in self.graph.before or "before" in task:
            return False
        payload = {"kind": "before", "node": task["node"], "input": task["input"]}
        self._pause(task, payload, 0, "before")
        return True

    def _lend(self, task: dict[str, Any]) -> Lent | None:
        """The task's input lent to its node, when it runs alone and each step is saved
        before the next: then nothing else holds what the node could change. Otherwise
        (None) the node gets a copy."""
        if self._parallel or self.tree.durability != "sync":
            return None
        return lend(task["input"], self.cp.texts)

    @staticmethod
    def _given(task: dict[str, Any], lent: Lent | None) -> Any:
        return lent.value if lent is not None else json_clone(task["input"])

    def _take_back(self, lent: Lent | None, intact: bool | None = None) -> None:
        """A lent input the node changed in place is put back, and the next save is
        whole: the head it would be a patch against shares what the node changed."""
        if lent is None or (lent.intact() if intact is None else intact):
            return
        lent.put_back()
        self.cp.forget_base()

    def _settle(self, task: dict[str, Any], output: Any, lent: Lent | None = None) -> None:
        intact = lent is not None and lent.intact()
        try:
            # Copied before a changed input is put back (the output may be that input);
            # what a large input left intact shares with it is proven already.
            if lent is not None and intact and lent.large:
                output = json_copy_sharing(output, lent.value)
            else:
                output = json_copy(output)
        except NotJSON as exc:
            raise NodeError(task["node"], task["id"], f"returned {exc}") from None
        finally:
            self._take_back(lent, intact)
        self._complete_or_pause_after(task, output)

    def _complete_or_pause_after(self, task: dict[str, Any], output: Any) -> None:
        """Complete the task, or pause after it when the graph has a breakpoint there."""
        if task["node"] in self.graph.after and "after" not in task:
            task["output"] = output
            payload = {"kind": "after", "node": task["node"], "output": output}
            self._pause(task, payload, 0, "after")
            return
        self._complete(task, output)

    async def _call(self, spec: NodeSpec, node_input: Any, ctx: NodeContext) -> Any:
        args = _node_args(spec, node_input, ctx)
        if spec.is_async:
            return await spec.fn(*args)
        if self._parallel or self.tree.sync_nodes == "thread":
            # Parallel sync tasks overlap in threads; "thread" also suits nodes that block
            # or use an ORM that refuses to run inside an event loop (Django's).
            return await asyncio.to_thread(spec.fn, *args)
        self._inline_sync_node = True  # alone in its step: a thread hop would cost more
        try:
            return spec.fn(*args)
        finally:
            self._inline_sync_node = False

    def _pause(self, task: dict[str, Any], payload: Any, order: int, kind: str,
               signal: InterruptSignal | None = None) -> None:
        iid = interrupt_id(self.cp.run_id, task["id"], kind, order)
        created = now_ms()
        deadline_s = signal.deadline_s if signal else None
        self.cp.interrupts.append({
            "id": iid, "node": task["node"], "task_id": task["id"], "payload": payload,
            "order": order, "namespace": list(self.cp.namespace), "run_id": self.cp.run_id,
            "sub_agent_id": self.cp.sub_agent_id, "checkpoint_id": "",
            "thread_id": self.cp.thread_id, "kind": kind, "created_at": created,
            "deadline_at": created + int(deadline_s * 1000) if deadline_s is not None else None,
            "has_default": bool(signal and signal.has_default),
            "default": signal.default if signal else None,
            "assignees": signal.assignees if signal else None,
            "summary_fields": signal.summary_fields if signal else None,
        })
        task["status"] = "interrupted"
        task["interrupt_id"] = iid

    def _complete(self, task: dict[str, Any], output: Any) -> None:
        task["status"] = "done"
        task["output"] = output
        self.cp.add_history({"node": task["node"], "output": output, "task_id": task["id"]})

    def _mark_cancelled(self, task: dict[str, Any]) -> None:
        # An explicit marker, not None: the next node must be able to tell "cancelled"
        # apart from a sub-agent that finished with nothing to say.
        marker = cancelled_output(task["node"])
        task["status"] = "cancelled"
        task["output"] = marker
        self.cp.add_history({"node": task["node"], "output": marker, "cancelled": True,
                             "task_id": task["id"]})

    # -- sub-agents -----------------------------------------------------------------

    async def _run_child(self, task: dict[str, Any], spec: NodeSpec) -> None:
        assert spec.child is not None
        child = await self._open_child(task, spec.child)
        await child.drive()
        self._adopt(child)
        status = child.cp.status
        if status == "completed":
            self._complete_or_pause_after(task, child.cp.output)
        elif status == "cancelled":
            self._mark_cancelled(task)
        else:
            task["status"] = "interrupted"

    async def _open_child(self, task: dict[str, Any], child_graph: Graph) -> RunExecution:
        store = self.tree.store
        thread = task.get("child_thread_id")
        existing = await store.load(thread) if store is not None and thread else None
        if existing is not None:
            return RunExecution(child_graph, existing, self.tree, existing.id, self)
        thread = f"{self.cp.thread_id}/{task['node']}:{task['id'][:8]}"
        run_id = new_id()
        cp = Checkpoint(
            id="", thread_id=thread, node=None, interrupt_payload=None, state={}, history=[],
            pending_input=None, created_at=now_ms(), run_id=run_id,
            namespace=[*self.cp.namespace, task["node"]], graph=self.cp.graph,
            root_thread_id=self.cp.root_thread_id, parent_run_id=self.cp.run_id,
            parent_thread_id=self.cp.thread_id, sub_agent_id=task["node"],
            metadata={"parent_task_id": task["id"]},
            engine=RunBookkeeping(tasks=[new_task(run_id, 0, child_graph.first, task["input"])],
                                  lease=self.tree.lease),
        )
        cp.additions = Additions(reset=True)
        task["child_thread_id"] = thread
        task["child_run_id"] = run_id
        return RunExecution(child_graph, cp, self.tree, None, self)

    def _adopt(self, child: RunExecution) -> None:
        """Fold a child's summary (and its descendants') into ours."""
        self.cp.engine.children[child.cp.run_id] = _tree.root_summary(child.cp)
        self.cp.engine.children.update(child.cp.engine.children)
        self.dirty = True

    def _subtree_has_work(self, child_run_id: str) -> bool:
        subtree = _tree.descendants(self.cp, child_run_id)
        if subtree & self.tree.cancels:
            return True
        return any(entry["run_id"] in subtree for entry in self.tree.unapplied().values())

    # -- answers, cancels, steering -------------------------------------------------

    def _apply_inbox(self) -> None:
        for task in self.cp.engine.tasks:
            if task["status"] != "interrupted":
                continue
            if _waits_on_child(task):
                if self._subtree_has_work(task["child_run_id"]):
                    task["status"] = "pending"
                continue
            entry = self.tree.unapplied().get(task["interrupt_id"])
            if entry is not None:
                self._consume(task, entry)

    def _consume(self, task: dict[str, Any], entry: dict[str, Any]) -> None:
        iid = task.pop("interrupt_id")
        record = next(i for i in self.cp.interrupts if i["id"] == iid)
        self.cp.interrupts.remove(record)
        self.cp.add_resolved([{**record, "status": "answered", "answer": entry["value"],
                               "answered_at": entry["at"], "answered_by": entry.get("by")}])
        # The entry stays in the inbox until no checkpoint of the tree shows the interrupt
        # pending (see _stamp): a crash before the child's save must not lose the answer.
        self.tree.consumed.add(iid)
        self.dirty = True
        kind = record["kind"]
        if kind == "after":
            task["after"] = entry["value"]
            self._complete(task, task["output"])
        else:
            if kind == "before":
                task["before"] = entry["value"]
            else:
                task["answers"].append(entry["value"])
            task["status"] = "pending"
        if entry.get("child_policy") == "cancel":
            self._cancel_children()

    def _cancel_children(self) -> None:
        for task in self.cp.engine.tasks:
            if task["status"] == "interrupted" and _waits_on_child(task):
                self.tree.cancels.add(task["child_run_id"])
                task["status"] = "pending"

    async def _cancel_run(self) -> None:
        """Cancel this run and everything below it; pending interrupts end as cancelled."""
        for task in self.cp.engine.tasks:
            if _waits_on_child(task) and task["status"] in ("interrupted", "pending"):
                self.tree.cancels.add(task["child_run_id"])
                child = await self._open_child(task, self.graph.nodes[task["node"]].child)  # type: ignore[arg-type]
                await child.drive()
                self._adopt(child)
            if task["status"] in ("interrupted", "pending"):
                task.pop("interrupt_id", None)
                self._mark_cancelled(task)
        at = now_ms()
        self.cp.add_resolved([{**i, "status": "cancelled", "answer": None, "answered_at": at}
                              for i in self.cp.interrupts])
        self.cp.interrupts = []
        self.tree.cancels.discard(self.cp.run_id)
        self.dirty = True
        await self.save("cancelled")

    def steering_for_run(self) -> list[dict[str, Any]]:
        return [n for n in self.tree.steering if n["run_id"] == self.cp.run_id]

    # -- advancing ------------------------------------------------------------------

    def _route(self) -> NodeError | None:
        """Every task of the step has ended: route to the next step's tasks (or the
        error that a failing route is recorded as, nothing changed)."""
        incoming: dict[str, dict[str, Any]] = {}
        for task in self.cp.engine.tasks:
            try:
                nxt = self.graph.successors(task["node"], task.get("output"),
                                            NodeContext(self, task))
            except Exception as exc:
                return NodeError(task["node"], task["id"], f"route failed: {exc}")
            for name in nxt:
                incoming.setdefault(name, {})[task["node"]] = task.get("output")
        output = self._last_output()
        self.cp.step += 1
        self.cp.engine.tasks = [
            new_task(self.cp.run_id, self.cp.step, name,
                     next(iter(preds.values())) if len(preds) == 1 else preds)
            for name, preds in incoming.items()
        ]
        if not self.cp.engine.tasks:
            self.cp.output = output
        self.dirty = True
        return None

    def _last_output(self) -> Any:
        """The run's output: that of the task completed last (its step is the last)."""
        last = self.cp.last_completed
        if last is None:
            return None
        task = next((t for t in self.cp.engine.tasks if t["id"] == last["task_id"]), None)
        return task.get("output") if task is not None else None

    # -- saving ---------------------------------------------------------------------

    async def record_once(self, key: str, result: Any) -> None:
        self.cp.once[key] = result
        await self.save("running")

    def record_once_blocking(self, key: str, result: Any) -> None:
        """``record_once`` for a sync node, in whichever thread it runs: saved on return."""
        if self._on_store_thread:
            self.cp.once[key] = result
            self._save_here("running")
            return
        self.run_blocking(self.record_once(key, result))

    def check_can_block(self) -> None:
        """Refuse a sync ``once`` from an async node before it calls anything."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return
        if running is self.tree.loop and not self._inline_sync_node:
            raise ForgeError("ctx.once is for sync nodes; async nodes use await ctx.once_async")

    def run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Finish ``coro`` from a sync node, which runs in a worker thread or inline."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # A worker thread of the tree's loop: the loop exists (``drive`` set it).
            assert self.tree.loop is not None
            return asyncio.run_coroutine_threadsafe(coro, self.tree.loop).result()
        # An inline sync node blocks the tree's loop, so nothing else of this run moves:
        # saving on a side loop is safe, and the save is done before once() returns.
        return _SIDE_LOOP.submit(asyncio.run, coro).result()

    async def save(self, status: RunStatus) -> bool:
        """Persist the run; False when answers merged meanwhile mean it must go on."""
        self._mark(status)
        store = self.tree.store
        if store is None:
            if status == "interrupted":
                raise ResumeError("interrupts require a checkpoint store and a thread id")
            self.dirty = False
            return True
        async with self._lock:
            return await converse(store, self._saving(status))

    def _save_here(self, status: RunStatus) -> bool:
        """``save`` with the blocking twins, on the store's thread (the tree's other
        coroutines are idle: ``_fits_store_thread``)."""
        assert self._blocking is not None
        self._mark(status)
        return converse_blocking(self._blocking, self._saving(status))

    def _mark(self, status: RunStatus) -> None:
        self.cp.status = status
        self.cp.engine.lease = self.tree.lease if status == "running" else None

    def _saving(self, status: RunStatus) -> StoreDialogue[bool]:
        """The save, as store calls: on a conflict the root takes in what was recorded
        meanwhile under its lease and tries again (or goes on, when that is new work)."""
        while True:
            self._stamp()
            try:
                yield SaveNext(self.cp)
            except CheckpointConflict:
                if not self.is_root or not self._merge((yield LoadLatest(self.cp.thread_id))):
                    raise
                if self._goes_on(status):
                    return False
                continue
            self._saved()
            return True

    def _goes_on(self, status: RunStatus) -> bool:
        """After a merge: answers for a run about to pause mean it must go on instead."""
        if status == "interrupted" and self._has_new_work():
            self.cp.status, self.cp.engine.lease = "running", self.tree.lease
            return True
        return False

    def _saved(self) -> None:
        self.base = self.cp.id
        self.dirty = False

    def _stamp(self) -> None:
        cp = self.cp
        cp.id, cp.parent_id, cp.created_at = new_id(), self.base, now_ms()
        for record in cp.interrupts:
            record["checkpoint_id"] = cp.id
        waiting = next((t for t in cp.engine.tasks if t["status"] == "interrupted"), None)
        cp.pending_input = waiting["input"] if waiting else None
        if self.is_root:
            open_ids = {i["id"] for i in _tree.pending(cp)}
            cp.engine.answers = {k: v for k, v in self.tree.inbox.items() if k in open_ids}
            cp.engine.cancels = sorted(self.tree.cancels)
            cp.steering = list(self.tree.steering)
        else:
            cp.steering = self.steering_for_run()
        first = _tree.pending(cp)[:1] if self.is_root else cp.interrupts[:1]
        cp.interrupt_payload = first[0]["payload"] if first else None
        last = cp.last_completed
        cp.node = (cp.interrupts[0]["node"] if cp.interrupts
                   else last["node"] if last else None)

    def _merge(self, latest: Checkpoint | None) -> bool:
        """Take in answers, cancels and notes recorded while we held the lease."""
        if latest is None or latest.engine.lease != self.tree.lease:
            return False
        for iid, entry in latest.engine.answers.items():
            if iid not in self.tree.consumed:
                self.tree.inbox.setdefault(iid, entry)
        self.tree.cancels.update(latest.engine.cancels)
        known = {n["id"] for n in self.tree.steering}
        self.tree.steering.extend(n for n in latest.steering if n["id"] not in known)
        self.base = latest.id
        return True

    def _has_new_work(self) -> bool:
        open_ids = {i["id"] for i in _tree.pending(self.cp)}
        return bool(open_ids & self.tree.unapplied().keys()) \
            or self.cp.run_id in self.tree.cancels \
            or any(rid in self.tree.cancels for rid in self.cp.engine.children)


def _node_args(spec: NodeSpec, node_input: Any, ctx: NodeContext) -> tuple[Any, ...]:
    return (node_input, ctx) if spec.wants_ctx else (node_input,)


def _node_error(task: dict[str, Any], exc: Exception) -> NodeError:
    """A node's failure, reported with its node and task; a lost lease or a bad resume
    is no node's failure and propagates."""
    if isinstance(exc, NodeError):
        return exc
    if isinstance(exc, CheckpointConflict | ResumeError):
        raise exc
    if isinstance(exc, ForgeError):
        return NodeError(task["node"], task["id"], str(exc))
    error = NodeError(task["node"], task["id"], f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error
