"""A LangGraph thread's values at one of its checkpoints, as the dashboard shows them."""

from __future__ import annotations

from typing import Any

from .checkpointer import checkpointer
from .mirror import plain


def values_at(thread_id: str, checkpoint_id: str) -> dict[str, Any] | None:
    """The graph's state keys and values at ``checkpoint_id`` of the thread's top graph,
    as JSON data (None if the checkpoint is gone): one ``get_tuple``, kept once by
    ``ForgeSaver``, whatever the thread's length. LangGraph's own channels (``__start__``,
    ``branch:to:...``) are left out."""
    found = checkpointer().get_tuple({"configurable": {
        "thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}})
    if found is None:
        return None
    values = found.checkpoint["channel_values"]
    return plain({key: value for key, value in values.items()
                  if not key.startswith("__") and ":" not in key})
