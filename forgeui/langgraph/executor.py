"""A registered LangGraph graph, driven as the dashboard drives a ``DurableExecutor``.

``LangGraphExecutor`` offers the methods the dashboard's tasks and services call (run,
targeted resume, steer, cancel, recover, fork), each as LangGraph itself would do it:
``invoke(input)``, ``invoke(Command(resume={interrupt_id: value}))``, ``invoke(None)`` past
a static breakpoint, and a fork as a copy of one checkpoint on a new thread that
``invoke(None)`` goes on from. After each call where the thread stands is saved as its
next forge head (``mirror``), read back as a head: as a forge graph's steps, never the
thread's whole history. Calls on one thread are serialised, so two answers to parallel
interrupts never resume the same LangGraph checkpoint at once. A graph with async nodes
is called the same ways with ``ainvoke``, awaited on the task's loop (``awaiting``).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.base.id import uuid6
from langgraph.pregel import Pregel
from langgraph.types import Command as LangGraphCommand
from langgraph.types import StateSnapshot

from forgeui.langgraph import mirror, percall
from forgeui.langgraph.awaiting import AwaitedCalls, has_async_nodes
from forgeui.langgraph.locks import thread_lock
from forgeui.models import Run
from forgeui.store import DjangoCheckpointStore
from runtime import Command, Draft, Head, Interrupt, ResumeTarget, RunResult
from runtime.checkpoint import Additions
from runtime.errors import ResumeError, StaleResumeTarget
from runtime.executor import GraphShape

LIVE = ("running", "interrupted")
# What a thread shows when LangGraph cannot read it back after a failure.
EMPTY = StateSnapshot(values={}, next=(), config=None, metadata=None, created_at=None,
                      parent_config=None, tasks=(), interrupts=())


class LangGraphExecutor(AwaitedCalls):
    """Runs of one compiled LangGraph graph, registered as ``name``. A graph with async
    nodes (``awaits``) is driven through the awaited twins of the ``*_sync`` calls."""

    input_schema = None  # LangGraph validates its own input
    # A fork asks its interrupts anew (new task ids), so no pre-filled answer can name the
    # copy's; an edited input is LangGraph's own ``update_state`` on the copy.
    fork_edits: tuple[str, ...] = ("inputs",)

    def __init__(self, name: str, graph: Pregel) -> None:
        self.name = name
        self.graph = graph
        self.store = DjangoCheckpointStore()
        before = graph.interrupt_before_nodes
        self.breakpoints = frozenset(graph.nodes if before == "*" else before)
        self.controls = mirror.Controls.of(graph.config)
        self.awaits = has_async_nodes(graph)

    @property
    def saver(self) -> BaseCheckpointSaver:
        assert isinstance(self.graph.checkpointer, BaseCheckpointSaver)
        return self.graph.checkpointer

    @property
    def shape(self) -> GraphShape:
        nodes = tuple(name for name in self.graph.nodes if not name.startswith("__"))
        return GraphShape(nodes, (), {})

    def with_store(self, store: object, sync_nodes: object = None) -> LangGraphExecutor:
        return self  # the mirror is always the ORM store; LangGraph keeps its own saver

    # -- what the dashboard's tasks call ------------------------------------------------

    def run_sync(self, input: Any, thread_id: str | None = None, *,
                 metadata: dict[str, Any] | None = None,
                 run_id: str | None = None) -> RunResult:
        """``invoke(input)`` on the thread, as a new run of it."""
        thread_id = thread_id or uuid.uuid4().hex
        with thread_lock(thread_id):
            started = self._start(input, thread_id, metadata or {}, run_id)
            return self._invoke(input, started)

    def resume_targeted_sync(self, target: ResumeTarget, command: Any = None) -> RunResult:
        """Answer pending interrupts: ``Command(resume={interrupt_id: value})``."""
        with thread_lock(self._thread_of(target.run_id)):
            before, value, answered = self._resuming(target, command)
            return self._invoke(value, before, answered)

    def steer_sync(self, target: ResumeTarget, text: str) -> dict[str, Any]:
        """Keep a steering note beside the run (a LangGraph node has no ``ctx.steering``)."""
        with thread_lock(self._thread_of(target.run_id)):
            return self._steer(target, text)

    def cancel_sync(self, target: str | ResumeTarget) -> RunResult:
        """Stop the run where it stands: its pending interrupts end as cancelled."""
        run_id = target.run_id if isinstance(target, ResumeTarget) else target
        with thread_lock(self._thread_of(run_id)):
            return self._cancel(run_id)

    def recover_sync(self, thread_id: str) -> RunResult:
        """``invoke(None)``: go on from the latest checkpoint (after a failure or a fork)."""
        with thread_lock(thread_id):
            before = self._recoverable(thread_id)
            return before if isinstance(before, RunResult) else self._invoke(None, before)

    def fork_sync(self, thread_id: str, checkpoint_id: str | None = None, *,
                  inputs: dict[str, Any] | None = None) -> str:
        """A new thread holding the LangGraph checkpoint a forge checkpoint mirrors; left
        running, so that ``recover_sync`` (``invoke(None)``) takes it on from there.

        ``inputs`` (interrupt id -> state values, checked by ``fork_input_problem``) is
        applied to the copy as ``update_state(values)``: through the graph's reducers, as
        if the node before the paused one had written them, so that node runs again."""
        source = self._head_at(thread_id, checkpoint_id)
        if source is None or source.thread_id != thread_id:
            raise StaleResumeTarget(f"no checkpoint {checkpoint_id!r} in thread {thread_id!r}")
        for interrupt_id, values in (inputs or {}).items():
            if problem := self.fork_input_problem(self._pending_at(source, interrupt_id),
                                                  values):
                raise ResumeError(problem)
        new_thread = uuid.uuid4().hex
        self._copy_checkpoint(thread_id, source.metadata.get(mirror.LANGGRAPH_CHECKPOINT),
                              new_thread)
        for values in (inputs or {}).values():
            self.graph.update_state(self._config(new_thread), values)
        run_id = uuid.uuid4().hex
        started = self._starting(new_thread, run_id, None, {
            "registered_as": source.metadata.get("registered_as") or self.name})
        started.forked_from = source.id
        self.store.save_head_sync(started)
        return new_thread

    def fork_input_problem(self, record: dict[str, Any] | None, values: Any) -> str | None:
        """Why ``values`` cannot be the new input of the node paused at ``record``, if so:
        it must be some of the graph's state keys, for a node of the top graph."""
        if record is None:
            return "that interrupt is not pending at this checkpoint"
        if len(record.get("namespace") or []) > 1:
            return (f"{record['node']!r} runs in a subgraph; edit the input of a node of "
                    f"the top graph")
        if not isinstance(values, dict) or not values:
            return "a LangGraph node's new input is an object of state keys and values"
        keys = set(self.graph.stream_channels_list)
        if unknown := sorted(set(values) - keys):
            return (f"{unknown[0]!r} is not a key of this graph's state "
                    f"(its keys: {', '.join(sorted(keys))})")
        return None

    @staticmethod
    def _pending_at(source: Head, interrupt_id: str) -> dict[str, Any] | None:
        return next((r for r in source.interrupts if r["id"] == interrupt_id), None)

    # -- helpers ------------------------------------------------------------------------

    def _start(self, input: Any, thread_id: str, metadata: dict[str, Any],
               run_id: str | None) -> Draft:
        """The new run's first head, saved, with its input kept on its row."""
        run_id = run_id or uuid.uuid4().hex
        before = self.store.load_head_sync(thread_id)
        if before is not None and before.status in LIVE:
            raise ResumeError(f"thread {thread_id!r} already has a {before.status} run")
        started = self._starting(thread_id, run_id, before, metadata)
        self.store.save_head_sync(started)
        self._keep_input(run_id, input)
        return started

    def _resuming(self, target: ResumeTarget, command: Any,
                  ) -> tuple[Draft, Any, frozenset[str]]:
        """The head an answer goes on from (with its steering note, saved), the value to
        resume LangGraph with, and the interrupts it answers."""
        command = command if isinstance(command, Command) else Command(resume=command)
        before = self._latest_of_run(target.run_id)
        answers = self._answers(before, target, command)
        if command.steering:  # kept beside the answer, never in the resume value
            before = self._with_note(before, target, command.steering)
            self.store.save_head_sync(before)
        return before, self._resume_value(before, answers), frozenset(answers)

    def _recoverable(self, thread_id: str) -> Draft | RunResult:
        """The head a recovery goes on from, or where the thread stands if it has ended."""
        before = self.store.load_head_sync(thread_id)
        if before is None:
            raise StaleResumeTarget(f"no thread {thread_id!r}")
        if before.status not in ("running", "failed"):
            return result_of(before)
        return self._counted(before)

    def _steer(self, target: ResumeTarget, text: str) -> dict[str, Any]:
        before = self._latest_of_run(target.run_id)
        noted = self._with_note(before, target, text)
        self.store.save_head_sync(noted)
        return {"run_id": target.run_id, "checkpoint_id": noted.id}

    def _cancel(self, run_id: str) -> RunResult:
        before = self._latest_of_run(run_id)
        if before.status not in LIVE:
            raise StaleResumeTarget(f"run {run_id!r} is {before.status}", latest(before))
        snapshot = self.graph.get_state(self._config(before.thread_id))
        cp = mirror.following(snapshot, before, pending=[],
                              outcome=mirror.Outcome(cancelled=True))
        self.store.save_head_sync(cp)
        return result_of(cp)

    def _invoke(self, value: Any, before: Draft,
                answered: frozenset[str] = frozenset()) -> RunResult:
        config = self._config(before.thread_id)
        outcome = mirror.Outcome()
        try:
            self.graph.invoke(value, config)
        except Exception as exc:  # the node's own error: the run is saved as failed
            outcome = self._failure(exc, config)
        return self._saved(config, before, outcome, answered)

    def _failure(self, exc: Exception, config: dict[str, Any]) -> mirror.Outcome:
        return mirror.Outcome(error={"type": type(exc).__name__, "message": str(exc),
                                     **self._failed_node(config)})

    def _saved(self, config: dict[str, Any], before: Draft, outcome: mirror.Outcome,
               answered: frozenset[str]) -> RunResult:
        """Where the thread stands after a call, saved as its next head."""
        snapshot = self._state(config, outcome)
        pending = mirror.pending_interrupts(snapshot, before, self.name, before.run_id,
                                            self.breakpoints, self.controls, answered)
        cp = mirror.following(snapshot, before, pending=pending, outcome=outcome)
        self.store.save_head_sync(cp)
        return result_of(cp)

    def _state(self, config: dict[str, Any], outcome: mirror.Outcome) -> StateSnapshot:
        try:
            return self.graph.get_state(config, subgraphs=True)
        except Exception:  # a failed run's writes may not even apply (a bad input)
            if outcome.error is None:
                raise
            return EMPTY

    def _failed_node(self, config: dict[str, Any]) -> dict[str, Any]:
        try:
            tasks = self.graph.get_state(config).tasks
        except Exception:  # the failure left writes that do not apply: no node to name
            return {}
        for task in tasks:
            if task.error:
                return {"node": task.name, "task_id": task.id}
        return {}

    def _answers(self, before: Head, target: ResumeTarget,
                 command: Command) -> dict[str, Any]:
        """The answers by forge interrupt id, each naming an interrupt that is pending."""
        pending = {record["id"]: record for record in before.interrupts}
        if command.resume_map:
            answers = dict(command.resume_map)
        elif target.interrupt_id:
            answers = {target.interrupt_id: command.resume}
        else:
            named = [i for i, r in pending.items()
                     if target.task_id in (None, r["task_id"])]
            if len(named) != 1:
                raise StaleResumeTarget(f"{len(named)} interrupts of run {target.run_id!r} "
                                        f"match; name one", latest(before))
            answers = {named[0]: command.resume}
        unknown = sorted(set(answers) - set(pending))
        if unknown:
            raise StaleResumeTarget(f"interrupt {unknown[0]!r} is not pending in run "
                                    f"{target.run_id!r}", latest(before))
        return {interrupt_id: (pending[interrupt_id], value)
                for interrupt_id, value in answers.items()}

    def _resume_value(self, before: Head, answers: dict[str, Any]) -> Any:
        if all(record["kind"] != "node" for record, _ in answers.values()):
            return None  # past a static breakpoint: invoke(None), as LangGraph does
        return LangGraphCommand(resume={
            mirror.langgraph_id(i): percall.resume_value(record["payload"], value)
            for i, (record, value) in answers.items() if record["kind"] == "node"})

    def _with_note(self, before: Draft, target: ResumeTarget, text: str) -> Draft:
        """The next head: ``before`` with one more steering note."""
        note = {"text": text, "task_id": target.task_id, "interrupt_id": target.interrupt_id,
                "at": int(time.time() * 1000)}
        return dataclasses.replace(
            before, id=f"{before.id}.note-{time.time_ns()}", parent_id=before.id,
            step=before.step + 1, steering=[*before.steering, note], additions=Additions(),
            last_completed=None)

    def _starting(self, thread_id: str, run_id: str, before: Draft | None,
                  metadata: dict[str, Any]) -> Draft:
        """A new run's first head; on a thread that had one, the step after its latest."""
        ended = before.metadata.get(mirror.ENDED) if before is not None else None
        started = Draft(
            id=f"{run_id}.start", thread_id=thread_id, node=None, interrupt_payload=None,
            pending_input=None, created_at=int(time.time() * 1000), run_id=run_id,
            parent_id=before.id if before is not None else None, namespace=[self.name],
            status="running", step=0, graph=self.name, root_thread_id=thread_id,
            metadata={"registered_as": self.name, **metadata,
                      **({mirror.ENDED: ended} if ended else {})})
        if before is not None:  # its record patches the head it follows
            started.saved, started.stored_at = before.saved, before.stored_at
        return started

    def _keep_input(self, run_id: str, input: Any) -> None:
        Run.objects.filter(pk=run_id).update(input=input)

    def _copy_checkpoint(self, thread_id: str, checkpoint_id: str | None,
                         new_thread: str) -> None:
        """Put the source checkpoint's values on the new thread, under a new id, so its
        tasks (and their interrupts) are new ones; pending writes stay behind."""
        source = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        if checkpoint_id:
            source["configurable"]["checkpoint_id"] = checkpoint_id
        found = self.saver.get_tuple(source)
        if found is None:
            return
        # LangGraph's own kind of id: a thread's latest is its greatest, so a random one
        # could sort after every checkpoint the fork goes on to make.
        step = found.metadata.get("step", -1)
        copied = {**found.checkpoint, "id": str(uuid6(clock_seq=step))}
        target = {"configurable": {"thread_id": new_thread, "checkpoint_ns": ""}}
        self.saver.put(target, copied, {**found.metadata, "source": "fork"},
                       copied["channel_versions"])

    def _thread_of(self, run_id: str) -> str:
        thread_id = Run.objects.filter(pk=run_id).values_list("thread_id", flat=True).first()
        if thread_id is None:
            raise StaleResumeTarget(f"no run {run_id!r}")
        return thread_id

    def _latest_of_run(self, run_id: str) -> Draft:
        found = self.store.load_run_head_sync(run_id)
        if found is None:
            raise StaleResumeTarget(f"no run {run_id!r}")
        return self._counted(found)

    def _counted(self, head: Draft) -> Draft:
        """``head``, with the interrupts that ended counted: a head saved whole by an
        earlier bridge kept them only in its resolved list, read once from its record."""
        if mirror.ENDED in head.metadata or not head.metadata.get(mirror.LANGGRAPH_CHECKPOINT):
            return head
        whole = self.store.load_by_id_sync(head.id)
        ended = mirror.ended_counts(None, whole.resolved if whole is not None else [])
        head.metadata = {**head.metadata, mirror.ENDED: ended}
        return head

    def _head_at(self, thread_id: str, checkpoint_id: str | None) -> Draft | None:
        """The thread's latest head, or the one of ``checkpoint_id`` (rebuilt from the
        thread's records only when it is an earlier one)."""
        latest = self.store.load_head_sync(thread_id)
        if checkpoint_id is None or (latest is not None and latest.id == checkpoint_id):
            return latest
        return self.store.load_head_by_id_sync(checkpoint_id)

    @staticmethod
    def _config(thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}}


def result_of(cp: Head) -> RunResult:
    return RunResult(thread_id=cp.thread_id, run_id=cp.run_id, status=cp.status,
                     interrupts=[Interrupt(**{k: v for k, v in r.items()
                                              if k in Interrupt.__slots__})
                                 for r in cp.interrupts],
                     output=cp.output, checkpoint_id=cp.id)


def latest(cp: Head) -> dict[str, Any]:
    return {"thread_id": cp.thread_id, "run_id": cp.run_id, "checkpoint_id": cp.id,
            "status": cp.status, "interrupts": list(cp.interrupts)}

