"""What callers ask of a run tree, as changes to its root's latest checkpoint: a new
run's first head, an answer, a note, a cancel, a take-over; and the errors they raise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._accept import accept_answers, checked_metadata
from ._ids import new_id, now_ms
from ._run_state import FINISHED, new_task
from .checkpoint import Additions, Draft, RunBookkeeping
from .errors import ResumeError, StaleResumeTarget
from .types import Command, ResumeTarget


def as_command(value: Any) -> Command:
    return value if isinstance(value, Command) else Command(resume=value)


def first_head(graph: str, first_node: str, input: Any, thread_id: str,
               existing: Draft | None, run_id: str | None, taken: bool,
               metadata: dict[str, Any] | None) -> Draft:
    """A new run's head, once the thread's latest checkpoint (``existing``) and whether
    ``run_id`` is ``taken`` are known."""
    if existing is not None and existing.status not in FINISHED:
        raise ResumeError(f"thread {thread_id!r} has a {existing.status} run; resume, "
                          f"recover or cancel it before starting another")
    if existing is not None and existing.parent_run_id is not None:
        raise ResumeError(f"thread {thread_id!r} belongs to a sub-agent")
    if taken:
        raise ResumeError(f"run id {run_id!r} is already taken")
    run_id = run_id or new_id()
    return Draft(
        id="", thread_id=thread_id, node=None, interrupt_payload=None,
        pending_input=None, created_at=now_ms(), run_id=run_id,
        namespace=[graph], graph=graph, root_thread_id=thread_id,
        once=dict(existing.once) if existing else {},
        metadata=checked_metadata(metadata, "run metadata") or {},
        engine=RunBookkeeping(tasks=[new_task(run_id, 0, first_node, input)],
                              lease=new_id(), outputs={}, routes=[]),
        additions=Additions(reset=True),
        # The new run's first save is a patch against the old head.
        saved=existing.saved if existing is not None else None,
    )


class Request:
    """A request's change to the root's latest checkpoint (``update_latest``'s ``change``):
    accept it, take the tree's lease if nobody holds it, and become the next checkpoint.

    ``drive``: apply the tree afterwards (False for a note); ``root_only``: raise
    ``SubAgentThread`` if ``root_thread`` is a sub-agent's. ``accepted`` is what
    ``accept`` returned, ``take_lease`` whether this request is to apply the tree.
    """

    def __init__(self, root_thread: str, accept: Callable[[Draft], Any],
                 drive: bool = True, root_only: bool = False) -> None:
        self.root_thread, self.accept = root_thread, accept
        self.drive, self.root_only = drive, root_only
        self.accepted: Any = None
        self.take_lease = False

    def __call__(self, root: Draft | None) -> Draft:
        if root is None:
            raise no_checkpoint(self.root_thread)
        if self.root_only and root.parent_run_id is not None:
            raise SubAgentThread(root)
        self.accepted = self.accept(root)
        self.take_lease = self.drive and (root.status != "running" or root.engine.lease is None)
        if self.take_lease:
            root.status, root.engine.lease = "running", new_id()
        root.parent_id, root.id, root.created_at = root.id, new_id(), now_ms()
        return root


def answer(root_thread: str, target: ResumeTarget | None, command: Command,
           root_only: bool = False) -> Request:
    return Request(root_thread, lambda root: accept_answers(root, target, command),
                   root_only=root_only)


def answer_sub_agent(sub: SubAgentThread, command: Command) -> Request:
    """``resume`` was given a sub-agent's thread: answer that run through its root."""
    return answer(sub.checkpoint.root_thread_id, ResumeTarget(sub.checkpoint.run_id), command)


def take_over(root: Draft) -> None:
    """``recover``'s request: go on with a run whose executor died or whose node failed
    (``NothingToDo`` when it is simply waiting for people)."""
    if root.status in ("running", "failed"):
        root.error = None
        root.engine.lease = None  # the old holder is gone: the request takes a new lease
    elif root.status == "interrupted" and not (root.engine.answers or root.engine.cancels):
        raise NothingToDo


def no_checkpoint(thread_id: str) -> StaleResumeTarget:
    return StaleResumeTarget(f"thread {thread_id!r} has no checkpoint",
                             {"thread_id": thread_id, "run_id": None, "checkpoint_id": None,
                              "status": None, "interrupts": []})


def unknown_run(run_id: str) -> StaleResumeTarget:
    return StaleResumeTarget(f"run {run_id!r} is unknown",
                             {"thread_id": None, "run_id": run_id, "checkpoint_id": None,
                              "status": None, "interrupts": []})


class SubAgentThread(Exception):
    """resume() was given a sub-agent's thread: answer through its root instead."""

    def __init__(self, checkpoint: Draft) -> None:
        super().__init__(checkpoint.thread_id)
        self.checkpoint = checkpoint


class NothingToDo(Exception):
    """recover() found a run that is simply waiting for people."""
