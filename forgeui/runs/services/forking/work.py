"""Forking a thread: the copy, its audit rows, its credit and assignment, and what it needs
to go on (a recovery task, its pre-filled answers), in one transaction.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from forgeui.models import Checkpoint, Interrupt, Run, RunStatus
from forgeui.permissions.roles import Action
from forgeui.runs import registry, run_status
from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.exceptions import NotFound
from forgeui.runs.services._common import (
    User,
    audit,
    latest_head,
    readable_head,
    require_role,
)
from forgeui.runs.services.answering import answer_interrupt
from forgeui.runs.services.forking.edits import (
    checked_edits,
    copy_of,
    require_no_policy_answers,
    require_start_for_input,
)
from forgeui.runs.services.forking.links import FORK
from forgeui.runs.tasks import recover_run_task
from forgeui.store import DjangoCheckpointStore
from runtime.checkpoint import Head


def fork_thread(user: User, thread_id: str, checkpoint_id: str | None = None,
                inputs: dict[str, Any] | None = None,
                answers: dict[str, Any] | None = None) -> str:
    """Copy a root thread (as of ``checkpoint_id``, default latest) into a new one.

    With changes (edit-then-fork), keyed by interrupts pending at that checkpoint:
    ``inputs`` gives a paused node a new input, from which it runs again in the fork (a
    new start: the start role, and the graph's ``input_schema``); ``answers`` answers
    the fork's copy of an interrupt right away, as ``user``, if ``user`` may answer the
    original (``require_may_answer``). Both are audited as ``fork.edit`` on the new
    thread. Everything is checked first; the copy, its answers and audit rows are
    written in one transaction. The copy's interrupts keep the original's assignment
    and claim. A copy that cannot go on by itself (taken mid-step, or with an edited
    input) is recovered in a task.
    """
    latest, team = readable_head(user, thread_id)
    require_role(user, Action.FORK, team, object_type="thread", object_id=thread_id[:255],
                 thread_id=thread_id[:255])
    if inputs:
        require_start_for_input(user, thread_id, team)
    source = _fork_source(latest, thread_id, checkpoint_id)
    executor = registry.executor_for(latest.metadata.get("registered_as") or latest.graph)
    edits = checked_edits(user, executor, source, inputs or {}, answers or {})
    require_no_policy_answers(user, edits)
    with transaction.atomic():
        new_thread = executor.fork_sync(thread_id, source.id, inputs=inputs or None)
        forked = latest_head(new_thread)
        _audit_fork(user, latest, source, forked, edits, team)
        source_tree = latest.root_thread_id or thread_id
        forked_runs = _credit_fork(user, source_tree, new_thread)
        _keep_assignment(source_tree, new_thread)
        _keep_team(new_thread, team)
        if _goes_on(forked):  # those saved failed to be recovered are, at once: working
            run_status.mark_working([r.run_id for r in forked_runs
                                     if r.status == RunStatus.FAILED], new_thread)
            enqueue_on_commit(recover_run_task, new_thread)
        for edit in edits:
            if edit["kind"] == "answer":
                answer_interrupt(user, copy_of(edit, new_thread).pk, edit["value"])
    return new_thread


def _goes_on(forked: Head) -> bool:
    """A copy taken mid-step, or with an edited input, is driven by a recovery."""
    return forked.status in ("running", "failed")


def _audit_fork(user: User, latest: Head, source: Head, forked: Head,
                edits: list[dict[str, Any]], team: str) -> None:
    """``thread.fork`` on the source thread (what ``links`` reads), and ``fork.edit`` on
    the copy when it came with changes."""
    audit(user, FORK, object_type="thread", object_id=source.thread_id, team=team,
          thread_id=source.thread_id, run_id=latest.run_id, before_checkpoint_id=source.id,
          after_checkpoint_id=forked.id,
          detail={"new_thread_id": forked.thread_id, "new_run_id": forked.run_id,
                  "seq": _seq_of(source.id), "recovered": _goes_on(forked), "edits": edits})
    if edits:
        audit(user, "fork.edit", object_type="thread", object_id=forked.thread_id, team=team,
              thread_id=forked.thread_id, run_id=forked.run_id, before_checkpoint_id=source.id,
              after_checkpoint_id=forked.id,
              detail={"source_thread_id": source.thread_id, "edits": edits})


def _credit_fork(user: User, source_thread: str, new_thread: str) -> list[Run]:
    """The fork's runs: started by whoever started their originals (the rule that nobody
    approves their own follows the run into its forks), forked by ``user``, and with
    their originals' input where the copy, taken past its first step, cannot tell it."""
    originals = {tuple(run.namespace): run for run in Run.objects.of_tree(source_thread)
                 .only("namespace", "input", "started_by")}
    actor = user if user is not None and user.is_authenticated else None
    forked = list(Run.objects.of_tree(new_thread).only("run_id", "namespace", "input",
                                                        "status"))
    for run in forked:
        original = originals.get(tuple(run.namespace))
        run.started_by_id = original.started_by_id if original is not None else None
        run.forked_by = actor
        if run.input is None and original is not None:
            run.input = original.input
    Run.objects.bulk_update(forked, ["started_by", "forked_by", "input"])
    return forked


def _keep_assignment(source_thread: str, new_thread: str) -> None:
    """Give the fork's interrupts the assignees and claim of those they copy: what a
    supervisor or a claim set after the pause lives only on the original's row."""
    held = {(row.task_id, row.order): row
            for row in Interrupt.objects.of_tree(source_thread).only(
                "task_id", "order", "assignees", "claimed_by", "claimed_at")}
    copies = []
    for copy in Interrupt.objects.of_tree(new_thread).pending():
        original = held.get((copy.task_id, copy.order))
        if original is not None:
            copy.assignees, copy.claimed_by_id, copy.claimed_at = (
                original.assignees, original.claimed_by_id, original.claimed_at)
            copies.append(copy)
    Interrupt.objects.bulk_update(copies, ["assignees", "claimed_by", "claimed_at"])


def _keep_team(new_thread: str, team: str) -> None:
    """A fork stays in its source's team, even where its rows were stamped otherwise (a
    request's copy has no request of its own to take a team from)."""
    Run.objects.of_tree(new_thread).exclude(team=team).update(team=team)
    Interrupt.objects.of_tree(new_thread).exclude(team=team).update(team=team)


def _fork_source(latest: Head, thread_id: str, checkpoint_id: str | None) -> Head:
    if not checkpoint_id:
        return latest
    found = DjangoCheckpointStore().load_by_id_sync(checkpoint_id)
    if found is None or found.thread_id != thread_id:
        raise NotFound(f"no checkpoint {checkpoint_id!r} in thread {thread_id!r}")
    return found


def _seq_of(checkpoint_id: str) -> int:
    """The checkpoint's 1-based place in its thread, as the timeline numbers it."""
    return Checkpoint.objects.filter(pk=checkpoint_id).values_list("seq", flat=True).first() or 0
