"""A fork's changes (edit-then-fork), checked before anything is copied: each names an
interrupt pending at the source checkpoint and is one the forker may make there.
"""

from __future__ import annotations

from typing import Any

from forgeui.models import Interrupt
from forgeui.permissions.roles import Action
from forgeui.runs.exceptions import Forbidden, InvalidRequest
from forgeui.runs.graph_runner import GraphRunner
from forgeui.runs.policies import approvals
from forgeui.runs.services._common import (
    User,
    check_input,
    get_interrupt,
    require_json,
    require_role,
)
from forgeui.runs.services.checks import policy_refusal, require_may_answer
from runtime.checkpoint import Head


def require_start_for_input(user: User, thread_id: str, team: str | None = None) -> None:
    """A paused node given a new input runs again from it, as a start would (in the
    thread's ``team``)."""
    try:
        require_role(user, Action.START_RUN, team, object_type="thread",
                     object_id=thread_id[:255], thread_id=thread_id[:255])
    except Forbidden as exc:
        raise Forbidden(f"a fork with an edited input starts that node again: {exc}") from None


def checked_edits(user: User, executor: GraphRunner, source: Head, inputs: dict[str, Any],
                  answers: dict[str, Any]) -> list[dict[str, Any]]:
    """Check each change names an interrupt pending at ``source`` and is one ``user`` may
    make there; describe it for audit."""
    for name, changes in (("inputs", inputs), ("answers", answers)):
        if changes and name not in executor.fork_edits:
            raise InvalidRequest(f"this graph's forks take no pre-filled {name}: fork, then "
                                 f"answer the copy", loc=["body", name])
    if both := set(inputs) & set(answers):
        raise InvalidRequest(f"interrupt {sorted(both)[0]!r}: edit its input or pre-fill its "
                             f"answer, not both", loc=["body", "answers"])
    pending = _pending_at(source)
    edits = []
    for kind, changes in (("input", inputs), ("answer", answers)):
        for iid, value in changes.items():
            record = pending.get(iid)
            where: list[str | int] = ["body", f"{kind}s", iid]
            if record is None:
                raise InvalidRequest(f"interrupt {iid!r} is not pending at checkpoint "
                                     f"{source.id!r}", loc=where)
            if kind == "answer":
                require_may_answer(user, get_interrupt(user, iid), value, loc=where)
            else:
                _check_input_edit(executor, record, value, where)
            edits.append({"kind": kind, "interrupt_id": iid, "node": record["node"],
                          "namespace": record.get("namespace") or [], "value": value,
                          "task_id": record["task_id"], "order": record.get("order", 0)})
    return edits


def _pending_at(source: Head) -> dict[str, dict[str, Any]]:
    """The interrupts pending at ``source``, its sub-agents' too, by id."""
    pending = {i["id"]: i for i in source.interrupts}
    for summary in source.engine.children.values():
        pending.update((i["id"], i) for i in summary.get("interrupts") or [])
    return pending


def _check_input_edit(executor: GraphRunner, record: dict[str, Any], value: Any,
                      where: list[str | int]) -> None:
    """A paused node's new input: JSON, fitting its schema, and one the graph takes."""
    require_json(value, "input", where)
    check_input(_input_schema_at(executor, record), value, where)
    problem = getattr(executor, "fork_input_problem", None)  # LangGraph's own rule
    if problem is not None and (message := problem(record, value)):
        raise InvalidRequest(message, loc=where)


def _input_schema_at(executor: GraphRunner, record: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a paused node's new input must fit: its run's ``input_schema`` when the
    node is the run's first, which was given the run's input; else none is known."""
    runner: GraphRunner | None = executor
    for name in (record.get("namespace") or [])[1:]:
        runner = runner.shape.sub_agents.get(name) if runner is not None else None
    if runner is None:
        return None
    return runner.input_schema if runner.shape.nodes[:1] == (record["node"],) else None


def require_no_policy_answers(user: User, edits: list[dict[str, Any]]) -> None:
    """Nobody approves their own, and a fork counts both its original's starter and its
    forker as its own: an answer under a policy is given in the fork's inbox, by others."""
    for edit in edits:
        original = (Interrupt.objects.select_related("run")
                    .filter(pk=edit["interrupt_id"]).first())
        if edit["kind"] == "answer" and original is not None and (
                policy := approvals.policy_for(original)) is not None:
            raise policy_refusal(user, original, f"policy {policy.name!r}: a fork cannot "
                                 f"come with its answer; others approve it in the inbox")


def copy_of(edit: dict[str, Any], new_thread: str) -> Interrupt:
    """The fork's copy of the interrupt an edit names: same task, same order."""
    return Interrupt.objects.of_tree(new_thread).pending().get(task_id=edit["task_id"],
                                                                order=edit["order"])
