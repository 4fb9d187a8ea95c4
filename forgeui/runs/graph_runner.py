"""The seam between the dashboard and a graph: what the tasks and services call.

``runtime.DurableExecutor`` and ``forgeui.langgraph``'s ``LangGraphExecutor`` both fit it
(``registry`` hands out either, and mypy holds both to it there), so nothing above the
registry needs to know which kind of graph a run is.
"""

from __future__ import annotations

from typing import Any, Protocol

from runtime import GraphShape, ResumeTarget, RunResult


class GraphRunner(Protocol):
    """A registered graph, bound to the ORM store, with its blocking entry points."""

    @property
    def name(self) -> str:
        """The graph's own name: the one its checkpoints carry."""

    @property
    def input_schema(self) -> dict[str, Any] | None:
        """JSON Schema a start's input must match; None where the graph checks its own."""

    @property
    def fork_edits(self) -> tuple[str, ...]:
        """Which changes a fork may come with: ``"inputs"``, ``"answers"``."""

    @property
    def shape(self) -> GraphShape:
        """Nodes, routes and sub-agents, to draw the graph and to place a paused node."""

    def run_sync(self, input: Any, thread_id: str | None = None, *,
                 metadata: dict[str, Any] | None = None,
                 run_id: str | None = None) -> RunResult: ...

    def resume_targeted_sync(self, target: ResumeTarget,
                             command: Any = None) -> RunResult: ...

    def steer_sync(self, target: ResumeTarget, text: str) -> dict[str, Any]: ...

    def cancel_sync(self, target: str | ResumeTarget) -> RunResult: ...

    def recover_sync(self, thread_id: str) -> RunResult: ...

    def fork_sync(self, thread_id: str, checkpoint_id: str | None = None, *,
                  inputs: dict[str, Any] | None = None) -> str: ...
