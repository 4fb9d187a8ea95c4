"""LangGraph graphs on forge: ``ForgeSaver`` keeps their checkpoints in forge's database.

Importing ``forgeui`` never imports LangGraph (an optional extra): ``ForgeSaver`` and
``values_at`` are loaded when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .saver import ForgeSaver
    from .values import values_at

__all__ = ["LANGGRAPH_CHECKPOINT", "ForgeSaver", "values_at"]

# The forge head's metadata key naming the LangGraph checkpoint it stands for.
LANGGRAPH_CHECKPOINT = "langgraph_checkpoint_id"


def __getattr__(name: str) -> Any:
    if name == "ForgeSaver":
        from .saver import ForgeSaver

        return ForgeSaver
    if name == "values_at":
        from .values import values_at

        return values_at
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
