"""What ``FORGE_GRAPHS`` may name of LangGraph: a compiled graph, a builder, or a factory
of either, made into a ``LangGraphExecutor`` on the dashboard's checkpointer."""

from __future__ import annotations

from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from forgeui.langgraph.checkpointer import checkpointer
from forgeui.langgraph.executor import LangGraphExecutor


def is_langgraph(found: object) -> bool:
    return isinstance(found, Pregel | StateGraph)


def executor(name: str, found: object) -> LangGraphExecutor:
    """``found`` compiled (or recompiled) with the dashboard's checkpointer, as ``name``.
    The graph's own settings (``interrupt_before``, its nodes and edges) are kept."""
    if isinstance(found, StateGraph):
        return LangGraphExecutor(name, found.compile(checkpointer=checkpointer()))
    if isinstance(found, Pregel):
        return LangGraphExecutor(name, found.copy(update={"checkpointer": checkpointer()}))
    raise TypeError(f"not a LangGraph graph (found {type(found).__name__})")
