"""The static shape of a graph: its nodes, their order, routes and breakpoints."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .types import END, Route


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node: a callable (sync or async, with or without ctx) or a sub-agent's graph."""

    name: str
    fn: Any
    wants_ctx: bool
    is_async: bool
    child: Graph | None


def _accepts_ctx(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


class Graph:
    """Validated nodes and edges; answers "what runs after this node?"."""

    def __init__(
        self,
        nodes: Sequence[tuple[str, Any]],
        edges: dict[str, Route] | None,
        interrupt_before: Sequence[str],
        interrupt_after: Sequence[str],
        sub_agents: Mapping[str, Graph] | None = None,
    ) -> None:
        """``sub_agents``: the graphs of the nodes that run as child runs, by node name."""
        if not nodes:
            raise ValueError("a graph needs at least one node")
        self.order = [name for name, _ in nodes]
        if len(set(self.order)) != len(self.order) or END in self.order:
            raise ValueError(f"node names must be unique and not {END!r}: {self.order}")
        self.nodes: dict[str, NodeSpec] = {}
        for name, fn in nodes:
            child = (sub_agents or {}).get(name)
            if child is None and not callable(fn):
                raise TypeError(f"node {name!r} is neither callable nor a DurableExecutor")
            wants_ctx = child is None and _accepts_ctx(fn)
            self.nodes[name] = NodeSpec(name, fn, wants_ctx, child is None and _is_async(fn), child)
        self.edges = dict(edges or {})
        self.route_wants_ctx = {name: _accepts_ctx(r) for name, r in self.edges.items()}
        named = [*self.edges, *interrupt_before, *interrupt_after]
        unknown = [n for n in named if n not in self.nodes]
        if unknown:
            raise ValueError(f"edges or breakpoints name unknown nodes: {unknown}")
        self.before = frozenset(interrupt_before)
        self.after = frozenset(interrupt_after)
        self.first = self.order[0]
        self._default_next = {a: b for a, b in zip(self.order, [*self.order[1:], END], strict=True)}

    def successors(self, node: str, output: Any, ctx: Any) -> list[str]:
        """The nodes that run after ``node`` produced ``output`` (empty: the branch ends)."""
        route = self.edges.get(node)
        if route is None:
            chosen: Any = self._default_next[node]
        else:
            chosen = route(output, ctx) if self.route_wants_ctx[node] else route(output)
        names = [chosen] if isinstance(chosen, str) or chosen is None else list(chosen)
        result: list[str] = []
        for name in names:
            if name in (END, None):
                continue
            if name not in self.nodes:
                raise ValueError(f"route after {node!r} chose unknown node {name!r}")
            if name not in result:
                result.append(name)
        return result
