"""A drawing of a graph as SVG, made on the server: nodes, edges, sub-agents as nested
boxes, and the nodes where the run is paused highlighted.

No script and no inline style (the CSP forbids both): shapes carry classes that
``forge.css`` colours. Edges a route picks at run time cannot be known from the graph
alone; the ones the run has taken so far are drawn (``observed``), and a routed node
the run has not left yet gets a dashed stub.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

if TYPE_CHECKING:
    from runtime import DurableExecutor

NODE_W, NODE_H = 140, 34
GAP_X, GAP_Y = 16, 36
PAD, LABEL_H = 10, 22
CHAR_W = 7.2  # monospace-ish width per character at the node font size

Path = tuple[str, ...]
Edge = tuple[str, str]


@dataclass
class Shape:
    """One graph laid out: where each node sits (its own origin at 0, 0)."""

    executor: DurableExecutor
    path: Path
    sizes: dict[str, tuple[float, float]] = field(default_factory=dict)
    spots: dict[str, tuple[float, float]] = field(default_factory=dict)
    children: dict[str, Shape] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)
    width: float = 0
    height: float = 0


@dataclass(frozen=True, slots=True)
class Marks:
    """What to highlight: paused, working and finished nodes, by path below the root."""

    paused: frozenset[Path] = frozenset()
    done: frozenset[Path] = frozenset()
    running: frozenset[Path] = frozenset()
    observed: dict[Path, set[Edge]] = field(default_factory=dict)


def draw(executor: DurableExecutor, marks: Marks) -> SafeString:
    """The SVG element for ``executor``, sized to fit and scaled down on narrow screens."""
    shape = lay_out(executor, (), marks)
    width, height = shape.width + 2 * PAD, shape.height + 2 * PAD + 8 + GAP_Y
    paused = ", ".join("/".join(p) for p in sorted(marks.paused)) or "nothing"
    running = "; running " + ", ".join("/".join(p) for p in sorted(marks.running))
    parts = [
        f'<svg class="graph-svg" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'aria-labelledby="graph-title">',
        f'<title id="graph-title">Graph {escape(executor.name)}: '
        f'{len(executor.shape.nodes)} nodes; paused at {escape(paused)}'
        f'{escape(running) if marks.running else ""}</title>',
        '<defs><marker id="graph-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" class="graph-arrowhead"/></marker></defs>',
        *_render(shape, PAD, PAD + 8, marks),
        "</svg>",
    ]
    return mark_safe("".join(parts))


def lay_out(executor: DurableExecutor, path: Path, marks: Marks) -> Shape:
    shape = Shape(executor, path)
    graph = executor.shape
    for name in graph.nodes:
        sub_agent = graph.sub_agents.get(name)
        if sub_agent is not None:
            child = lay_out(sub_agent, (*path, name), marks)
            shape.children[name] = child
            shape.sizes[name] = (max(child.width + 2 * PAD, _label_width(name)),
                                 child.height + 2 * PAD + LABEL_H)
        else:
            shape.sizes[name] = (max(NODE_W, _label_width(name)), NODE_H)
    shape.edges, shape.stubs = edges_of(executor, marks.observed.get(path, set()))
    _place(shape, _layers(list(graph.nodes), shape.edges))
    return shape


def edges_of(executor: DurableExecutor, observed: set[Edge]) -> tuple[list[Edge], list[str]]:
    """Fixed edges (list order), the routed ones the run took, and routed nodes not left yet."""
    graph = executor.shape
    edges: list[Edge] = []
    stubs: list[str] = []
    for here, after in zip(graph.nodes, graph.nodes[1:], strict=False):
        if here not in graph.routed:
            edges.append((here, after))
    for name in graph.routed:
        taken = sorted((a, b) for a, b in observed if a == name and b in graph.nodes)
        edges.extend(taken)
        if not taken:
            stubs.append(name)
    return edges, stubs


def _layers(order: list[str], edges: list[Edge]) -> list[list[str]]:
    """Rows top to bottom: each node one row below its lowest predecessor (cycles capped)."""
    row = {order[0]: 0}
    for _ in range(len(order)):
        changed = False
        for a, b in edges:
            if a in row and row[a] + 1 > row.get(b, -1) and row[a] + 1 < len(order):
                row[b], changed = row[a] + 1, True
        if not changed:
            break
    for name in order:  # never reached by a known edge: after the others, in list order
        row.setdefault(name, max(row.values()) + 1)
    rows: list[list[str]] = [[] for _ in range(max(row.values()) + 1)]
    for name in order:
        rows[row[name]].append(name)
    return [r for r in rows if r]


def _place(shape: Shape, rows: list[list[str]]) -> None:
    widths = [sum(shape.sizes[n][0] for n in r) + GAP_X * (len(r) - 1) for r in rows]
    shape.width = max(widths)
    y = 0.0
    for names, row_width in zip(rows, widths, strict=True):
        x = (shape.width - row_width) / 2
        height = max(shape.sizes[n][1] for n in names)
        for name in names:
            w, h = shape.sizes[name]
            shape.spots[name] = (x, y + (height - h) / 2)
            x += w + GAP_X
        y += height + GAP_Y
    shape.height = y - GAP_Y


def _render(shape: Shape, left: float, top: float, marks: Marks) -> list[str]:
    parts = [_edge(shape, a, b, left, top) for a, b in shape.edges]
    parts += [_stub(shape, name, left, top) for name in shape.stubs]
    for name in shape.executor.shape.nodes:
        parts += _node(shape, name, left, top, marks)
    return parts


def _node(shape: Shape, name: str, left: float, top: float, marks: Marks) -> list[str]:
    x, y = shape.spots[name]
    x, y = x + left, y + top
    w, h = shape.sizes[name]
    path = (*shape.path, name)
    state = _state(path, marks)
    label = escape(name)
    if name in shape.children:
        return [f'<g class="graph-agent {state}" data-node="{escape("/".join(path))}">'
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8"/>'
                f'<text x="{x + PAD:.1f}" y="{y + 15:.1f}" class="graph-agent-label">'
                f'{label}</text></g>',
                *_render(shape.children[name], x + PAD, y + PAD + LABEL_H, marks)]
    return [f'<g class="graph-node {state}" data-node="{escape("/".join(path))}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6"/>'
            f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.1f}" text-anchor="middle">'
            f'{label}</text></g>']


def _state(path: Path, marks: Marks) -> str:
    if path in marks.paused:
        return "is-paused"
    if path in marks.running:
        return "is-running"
    if any(p[: len(path)] == path for p in marks.paused):
        return "is-waiting"
    return "is-done" if any(path[: len(d)] == d for d in marks.done) else ""


def _edge(shape: Shape, a: str, b: str, left: float, top: float) -> str:
    (ax, ay), (aw, ah) = shape.spots[a], shape.sizes[a]
    (bx, by), (bw, _) = shape.spots[b], shape.sizes[b]
    x1, y1 = left + ax + aw / 2, top + ay + ah
    x2, y2 = left + bx + bw / 2, top + by
    if y2 <= y1:  # back to an earlier row: round the side
        side = left + max(ax + aw, bx + bw) + GAP_X / 2
        return (f'<path class="graph-edge" d="M{left + ax + aw:.1f},{top + ay + ah / 2:.1f} '
                f'C{side + 20:.1f},{top + ay + ah / 2:.1f} {side + 20:.1f},{y2 + 10:.1f} '
                f'{left + bx + bw:.1f},{y2 + 10:.1f}" marker-end="url(#graph-arrow)"/>')
    mid = (y1 + y2) / 2
    return (f'<path class="graph-edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} '
            f'{x2:.1f},{mid:.1f} {x2:.1f},{y2 - 1:.1f}" marker-end="url(#graph-arrow)"/>')


def _stub(shape: Shape, name: str, left: float, top: float) -> str:
    (x, y), (w, h) = shape.spots[name], shape.sizes[name]
    cx, bottom = left + x + w / 2, top + y + h
    return (f'<g class="graph-route"><path class="graph-edge is-routed" '
            f'd="M{cx:.1f},{bottom:.1f} L{cx:.1f},{bottom + GAP_Y - 8:.1f}"/>'
            f'<title>{escape(name)} picks the next node at run time</title></g>')


def _label_width(name: str) -> float:
    return len(name) * CHAR_W + 2 * PAD
