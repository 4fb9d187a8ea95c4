"""The pause signal raised by ``ctx.interrupt``; node code never raises it itself."""

from __future__ import annotations

from typing import Any


class InterruptSignal(BaseException):
    """Raised by ``ctx.interrupt`` to pause the run; caught by the executor only.

    Users call ``ctx.interrupt`` and never raise this themselves: the executor records
    the pause from what ``ctx.interrupt`` put in it. It is public so that code catching
    ``BaseException`` can recognise a pause and re-raise it. A ``BaseException`` so that
    ``except Exception`` in node code cannot swallow it.
    """

    def __init__(
        self,
        payload: Any,
        order: int = 0,
        *,
        deadline_s: float | None = None,
        default: Any = None,
        has_default: bool = False,
        assignees: dict[str, list[str]] | None = None,
        summary_fields: list[str] | None = None,
        sensitive: list[str] | None = None,
    ) -> None:
        super().__init__(payload)
        self.payload = payload
        self.order = order
        self.deadline_s = deadline_s
        self.default = default
        self.has_default = has_default
        self.assignees = assignees
        self.summary_fields = summary_fields
        self.sensitive = sensitive
