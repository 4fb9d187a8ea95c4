"""The one checkpointer every registered LangGraph graph is compiled with."""

from __future__ import annotations

from functools import cache

from langgraph.checkpoint.base import BaseCheckpointSaver

from .saver import ForgeSaver


@cache
def checkpointer() -> BaseCheckpointSaver:
    """``ForgeSaver`` on the default database: every worker process sees every thread."""
    return ForgeSaver()
