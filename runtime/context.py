"""What a node sees of its run: interrupt, idempotent side effects, steering notes."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from ._answer_schema import check_answer_schema
from ._jsonvalue import NotJSON, json_copy
from .checkpoint import Draft
from .errors import ForgeError
from .signal import InterruptSignal

_MISSING: Any = object()


class _RunInProgress(Protocol):
    """What a node's context needs of the run executing the node."""

    @property
    def cp(self) -> Draft:
        """The run's working checkpoint."""

    def steering_for_run(self) -> list[dict[str, Any]]:
        """The steering notes aimed at this run, oldest first."""

    def check_can_block(self) -> None:
        """Refuse a blocking ``once`` where it would block the run's event loop."""

    def record_once_blocking(self, key: str, result: Any) -> None:
        """Save ``result`` under ``key`` before returning, from a sync node."""

    async def record_once(self, key: str, result: Any) -> None:
        """Save ``result`` under ``key`` before returning, from an async node."""


class NodeContext:
    """Handed to ``fn(input, ctx)``; one per task attempt."""

    def __init__(self, execution: _RunInProgress, task: dict[str, Any]) -> None:
        self._execution = execution
        self._task = task
        self._next_order = 0

    @property
    def thread_id(self) -> str:
        return self._execution.cp.thread_id

    @property
    def run_id(self) -> str:
        return self._execution.cp.run_id

    @property
    def node(self) -> str:
        return str(self._task["node"])

    @property
    def task_id(self) -> str:
        return str(self._task["id"])

    @property
    def namespace(self) -> list[str]:
        return list(self._execution.cp.namespace)

    @property
    def steering(self) -> list[str]:
        """The texts of the steering notes aimed at this run or at this task of it,
        oldest first: a note for one task is never read by its siblings."""
        return [note["text"] for note in self._execution.steering_for_run()
                if note.get("task_id") in (None, self._task["id"])]

    def interrupt(
        self, payload: Any, deadline_s: float | None = None, default: Any = _MISSING,
        assignees: Mapping[str, Sequence[str]] | None = None,
        summary: Sequence[str] | None = None, sensitive: Sequence[str] | None = None,
    ) -> Any:
        """Pause here until a person answers; on re-run, return that answer.

        Answers are matched by order: the n-th ``interrupt()`` call of this task gets the
        n-th answer. ``deadline_s``/``default`` let the dashboard answer for you when late;
        ``assignees`` (``{"users": [...], "groups": [...]}``) names who may answer;
        ``summary`` names the payload keys (say ``("amount", "payee")``) that the
        dashboard's one-line summary shows beside the question; ``sensitive`` names the
        payload keys (say ``("iban",)``) shown only to people who may answer, masked in
        lists, exports and notifications, and kept whole in the checkpoint. These come
        only from here,
        never from keys of ``payload``, which may carry data the graph forwards from a user
        or a model.
        """
        order = self._next_order
        self._next_order += 1
        answers = self._task["answers"]
        if order < len(answers):
            return answers[order]
        try:
            payload = json_copy(payload)
            default = default if default is _MISSING else json_copy(default)
        except NotJSON as exc:
            raise ForgeError(f"interrupt in node {self.node!r}: {exc}") from None
        check_answer_schema(self.node, payload)
        has_default = default is not _MISSING
        raise InterruptSignal(payload, order, deadline_s=_deadline(self.node, deadline_s),
                              default=default if has_default else None, has_default=has_default,
                              assignees=_assignees(self.node, assignees),
                              summary_fields=_summary_fields(self.node, summary),
                              sensitive=_field_names(self.node, "sensitive", sensitive, 64))

    def answer_metadata(self, order: int | None = None) -> dict[str, Any]:
        """What was recorded beside an answer (``Command.metadata``), such as who approved
        it; ``{}`` when nothing was. ``order`` picks this task's n-th ``interrupt()``
        call; by default, the last one that has returned an answer in this attempt."""
        if order is None:
            order = self._next_order - 1
        metas = self._task.get("answer_meta") or []
        if not 0 <= order < min(len(metas), len(self._task["answers"])):
            return {}
        found: dict[str, Any] = json_copy(metas[order])
        return found

    def idempotency_key(self, name: str) -> str:
        """A stable key (thread, node, task, name) to hand to external APIs."""
        return f"{self.thread_id}:{self.node}:{self.task_id}:{name}"

    def once(self, key: str, fn: Callable[[], Any]) -> Any:
        """Call ``fn()`` at most once per thread for ``key``; re-runs get the recorded result.

        The result is saved in a checkpoint before this returns, so a crash right after
        does not repeat the side effect.
        """
        self._execution.check_can_block()
        recorded = self._execution.cp.once
        if key in recorded:
            return json_copy(recorded[key])
        result = self._checked(key, fn())
        self._execution.record_once_blocking(key, result)
        return result

    async def once_async(self, key: str, fn: Callable[[], Any | Awaitable[Any]]) -> Any:
        """``once`` for async nodes; ``fn`` may be sync or async."""
        recorded = self._execution.cp.once
        if key in recorded:
            return json_copy(recorded[key])
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        result = self._checked(key, result)
        await self._execution.record_once(key, result)
        return result

    def _checked(self, key: str, result: Any) -> Any:
        try:
            return json_copy(result)
        except NotJSON as exc:
            raise ForgeError(f"ctx.once({key!r}) in node {self.node!r}: {exc}") from None


def _deadline(node: str, seconds: Any) -> float | None:
    """``deadline_s`` as a number of seconds, refusing what no clock can mean."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
            0 <= seconds < 10**9):
        raise ForgeError(f"interrupt in node {node!r}: deadline_s must be a number of seconds "
                         f"from 0 to 10**9, not {seconds!r}")
    return float(seconds)


def _assignees(node: str, named: Any) -> dict[str, list[str]] | None:
    """``{"users": [...], "groups": [...]}`` with both keys, or None when nobody is named."""
    if named is None:
        return None
    if not isinstance(named, Mapping) or set(named) - {"users", "groups"}:
        raise ForgeError(f"interrupt in node {node!r}: assignees must be a mapping with "
                         f"\"users\" and/or \"groups\", not {named!r}")
    found: dict[str, list[str]] = {}
    for key in ("users", "groups"):
        names = named.get(key) or []
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise ForgeError(f"interrupt in node {node!r}: assignees[{key!r}] must be a "
                             f"list of names, not {names!r}")
        found[key] = list(names)
    return found


MAX_SUMMARY_FIELDS = 8


def _summary_fields(node: str, named: Any) -> list[str] | None:
    """The payload keys a summary shows, in order; None when none are named."""
    return _field_names(node, "summary", named, MAX_SUMMARY_FIELDS)


def _field_names(node: str, what: str, named: Any, most: int) -> list[str] | None:
    """Up to ``most`` payload keys, in order, once each; None when none are named."""
    if named is None:
        return None
    if (isinstance(named, str | bytes) or not isinstance(named, Sequence)
            or not all(isinstance(key, str) for key in named)
            or len(named) > most):
        raise ForgeError(f"interrupt in node {node!r}: {what} must be a list of up to "
                         f"{most} payload keys, not {named!r}")
    return list(dict.fromkeys(named))
