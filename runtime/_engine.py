"""Drives one run of a tree step by step, saving a checkpoint after each step.

A step is the set of tasks that run together. A task ends ``done``, ``interrupted``
(waiting for a person, or for its child run), ``cancelled``, or fails the run. Answers
reach tasks through the tree's inbox (``TreeState.inbox``), which the root checkpoint
persists; the executor that holds the tree's lease is the only one that applies them.

The run is applied by ``RunExecution``, built in parts of one concept each: its state
(``_run_state``), saving (``_run_saving``), sub-agents (``_run_children``), tasks
(``_run_tasks``), the inbox (``_run_inbox``); this module is the loop and the routing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

from ._ids import now_ms
from ._run_inbox import InboxHandling
from ._run_state import FINISHED, TreeState, new_task, node_error
from .checkpoint import run_from_sync
from .context import NodeContext
from .errors import NodeError
from .types import RunStatus

__all__ = ["FINISHED", "RunExecution", "TreeState", "new_task"]


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


class RunExecution(InboxHandling):
    """One run (root or sub-agent) being applied: the loop that decides its next step
    and carries it out, on the event loop or on a blocking store's thread."""

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

    def _fits_store_thread(self, runnable: list[dict[str, Any]]) -> bool:
        """One sync task, nothing else of the tree running: it may run on the store's
        thread, which, like a worker thread, may block and may use Django's ORM."""
        if self._blocking is None or len(runnable) != 1:
            return False
        if self.parent is not None and self.parent.mode == "parallel":
            return False
        spec = self.graph.nodes[runnable[0]["node"]]
        return spec.child is None and not spec.is_async

    async def _run_step_tasks(self, runnable: list[dict[str, Any]]) -> None:
        # Inside a parallel step of an ancestor, sync nodes must not block the shared loop.
        parallel = len(runnable) > 1 or (self.parent is not None
                                         and self.parent.mode == "parallel")
        self.mode = "parallel" if parallel else "alone"
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
            return node_error(task, exc)
        return None

    def _run_here(self, task: dict[str, Any]) -> NodeError | None:
        """``_guarded`` for one sync task on the store's thread."""
        self.mode = "store-thread"
        try:
            self._run_sync_task(task)
        except Exception as exc:
            return node_error(task, exc)
        finally:
            self.mode = "alone"
        return None

    async def _fail(self, error: NodeError) -> NoReturn:
        self.cp.error = {"node": error.node, "task_id": error.task_id, "message": str(error),
                         "at": now_ms()}
        await self.save("failed")
        raise error

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
        self.cp.engine.took((task["node"] for task in self.cp.engine.tasks), incoming)
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
