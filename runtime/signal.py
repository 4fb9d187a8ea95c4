"""The pause signal raised by ``ctx.interrupt``."""

from __future__ import annotations

from typing import Any


class InterruptSignal(BaseException):  # noqa: N818 - a signal, not an error
    """Raised inside a node to pause the run; caught by the executor only.

    A ``BaseException`` so that ``except Exception`` in node code cannot swallow it.
    """

    def __init__(self, payload: Any, order: int, kind: str = "node") -> None:
        super().__init__(payload)
        self.payload = payload
        self.order = order
        self.kind = kind
