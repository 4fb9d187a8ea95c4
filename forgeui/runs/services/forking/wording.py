"""What a fork's first checkpoint says: its status, and in words what happens next.

The runtime saves a copy taken mid-step (or with an edited input) ``failed``, so that
``recover`` drives it: nobody holds its lease. Nothing failed there, so the pages and
the API show it as ``forked`` and say which node resuming will run; a checkpoint that
did fail keeps ``failed`` and its reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime.checkpoint import REOPENED_BY_FORK, Checkpoint

FORKED = "forked"


def is_fork_start(cp: Checkpoint) -> bool:
    return cp.parent_id is None and cp.forked_from is not None


def waits_for_recover(cp: Checkpoint) -> bool:
    """A fork's first checkpoint, saved ``failed`` only so that it gets driven."""
    return is_fork_start(cp) and cp.status == "failed"


def shown_status(cp: Checkpoint) -> str:
    return FORKED if waits_for_recover(cp) else cp.status


def shown_error(cp: Checkpoint) -> dict[str, Any] | None:
    """The reason a checkpoint failed; None where nothing did."""
    return None if waits_for_recover(cp) else cp.error


def next_step(cp: Checkpoint) -> str:
    """``Forked before pay ran: resuming will run pay``; "" unless ``cp`` starts a fork."""
    if not is_fork_start(cp):
        return ""
    pending = _names(t["node"] for t in cp.engine.tasks if t.get("status") == "pending")
    paused = _names(i["node"] for i in cp.interrupts)
    if waits_for_recover(cp) and (cp.error or {}).get("message") == REOPENED_BY_FORK and pending:
        return (f"Forked with an edited input for {pending}: resuming will run {pending} "
                f"again from it")
    if pending:
        return f"Forked before {pending} ran: resuming will run {pending}"
    if paused:
        return f"Forked while {paused} waits for an answer: answering it goes on"
    return f"Forked from a {cp.status} checkpoint"


def _names(nodes: Iterable[str]) -> str:
    return " and ".join(dict.fromkeys(nodes))
