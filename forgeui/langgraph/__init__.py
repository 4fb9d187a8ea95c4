"""LangGraph graphs on forge: ``ForgeSaver`` keeps their checkpoints in forge's database.

Importing ``forgeui`` never imports LangGraph (an optional extra): ``ForgeSaver`` and
``values_at`` are loaded when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .saver import ForgeSaver
    from .values import values_at

__all__ = ["LANGGRAPH_CHECKPOINT", "ForgeSaver", "shown_state", "values_at"]

# The forge head's metadata key naming the LangGraph checkpoint it stands for.
LANGGRAPH_CHECKPOINT = "langgraph_checkpoint_id"


def shown_state(checkpoint: Any) -> dict[str, Any]:
    """A checkpoint's state as people read it: for a LangGraph run the graph's values at
    that step (kept once, by ``ForgeSaver``), else the forge checkpoint's own state."""
    mirrored = (checkpoint.metadata or {}).get(LANGGRAPH_CHECKPOINT)
    if not mirrored:
        return dict(checkpoint.state)
    from .values import values_at

    return values_at(checkpoint.thread_id, mirrored) or {}


def __getattr__(name: str) -> Any:
    if name == "ForgeSaver":
        from .saver import ForgeSaver

        return ForgeSaver
    if name == "values_at":
        from .values import values_at

        return values_at
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
