"""The one checkpointer every registered LangGraph graph is compiled with."""

from __future__ import annotations

from functools import cache

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver


@cache
def checkpointer() -> BaseCheckpointSaver:
    """The saver the dashboard runs LangGraph graphs on, one per process."""
    return InMemorySaver()
