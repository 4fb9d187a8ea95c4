"""What the dashboard's services refuse, for the API and views to map to HTTP once.

::

    ForgeUIError                 root of the dashboard's refusals
    ├── UnknownGraph             a graph name FORGE_GRAPHS does not register (422)
    ├── GraphUnavailable         a registered graph that cannot be loaded (409)
    ├── NotFound                 no such run, thread or interrupt (404)
    ├── InvalidRequest           a value or note the target cannot take (400/422)
    ├── Forbidden                the user's role may not do this (403)
    ├── StaleAnswer              the interrupt is no longer pending (409)
    │   └── AlreadyCounted       this person's approval is already counted (409)
    └── AlreadyClaimed           someone else claimed the interrupt first (409)

Runtime errors (``runtime.errors``) pass through unchanged.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured


class ForgeUIError(Exception):
    """Root of the dashboard's refusals."""


class UnknownGraph(ForgeUIError, LookupError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown graph {name!r}; registered graphs: {', '.join(known) or '-'}")
        self.name = name
        self.known = known


class GraphUnavailable(ForgeUIError, ImproperlyConfigured):
    """A registered graph whose module, attribute or factory fails: nothing can run it."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"graph {name!r} cannot be loaded: {reason}")
        self.name = name
        self.reason = reason


class NotFound(ForgeUIError, LookupError):
    """No run, thread or interrupt by that id."""


class InvalidRequest(ForgeUIError, ValueError):
    """The request is well-formed but its content cannot be used.

    ``loc`` names the failing field the way the API reports it (``["body", "value",
    "limit"]``); empty when no one field is to blame.
    """

    def __init__(self, message: str, loc: list[str | int] | None = None) -> None:
        super().__init__(message)
        self.loc = loc or []


class Forbidden(ForgeUIError):
    """The user's role does not allow this."""


class StaleAnswer(ForgeUIError):
    """Someone answered first, or the run moved on: nothing was recorded but an audit row.

    ``answered_by`` / ``answered_at`` say who closed the interrupt and when (None when the
    runtime ended it); ``latest`` is where the run stands now: ``run_id``, ``thread_id``,
    ``root_thread_id``, ``checkpoint_id``, ``status`` and the pending ``interrupts``.
    """

    def __init__(self, interrupt_id: str, status: str | None, answered_by: str | None,
                 answered_at: str | None, latest: dict[str, Any], reason: str) -> None:
        super().__init__(reason)
        self.interrupt_id = interrupt_id
        self.status = status
        self.answered_by = answered_by
        self.answered_at = answered_at
        self.latest = latest
        self.reason = reason

    def as_dict(self) -> dict[str, Any]:
        return {"interrupt_id": self.interrupt_id, "status": self.status,
                "answered_by": self.answered_by, "answered_at": self.answered_at,
                "latest": self.latest, "reason": self.reason}


class AlreadyCounted(StaleAnswer):
    """Under an approval policy, one person's approval counts once: this is their second.

    ``answered_by`` / ``answered_at`` are theirs; ``progress`` where the policy stands."""

    def __init__(self, interrupt_id: str, username: str, at: str | None,
                 latest: dict[str, Any], vote: str, progress: str) -> None:
        super().__init__(interrupt_id, "pending", username, at, latest,
                         f"{username} already counted ({vote}) on this interrupt: {progress}")
        self.progress = progress


class AlreadyClaimed(ForgeUIError):
    """Someone else holds the claim on this interrupt; nothing changed."""

    def __init__(self, interrupt_id: str, claimed_by: str) -> None:
        super().__init__(f"already claimed by {claimed_by}")
        self.interrupt_id = interrupt_id
        self.claimed_by = claimed_by


class ThreadTaken(ForgeUIError):
    """The thread id already holds a run of another graph; nothing was started."""

    def __init__(self, thread_id: str, graph: str, status: str) -> None:
        super().__init__(f"thread {thread_id!r} holds a {status} run of graph {graph!r}; "
                         f"start another graph on a new thread id")
        self.thread_id, self.graph, self.status = thread_id, graph, status
