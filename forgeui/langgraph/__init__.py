"""LangGraph graphs on forge: ``ForgeSaver`` keeps their checkpoints in forge's database.

Importing ``forgeui`` never imports LangGraph (an optional extra): ``ForgeSaver`` is loaded
when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .saver import ForgeSaver

__all__ = ["ForgeSaver"]


def __getattr__(name: str) -> Any:
    if name == "ForgeSaver":
        from .saver import ForgeSaver

        return ForgeSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
