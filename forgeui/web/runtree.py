"""A run tree for the run page: each run with its children and its pending interrupts.

Two queries per tree (runs, pending interrupts), assembled in Python: trees are small
(a root and its sub-agents), and a recursive query would tie us to one database.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from forgeui import langgraph
from forgeui.models import Interrupt, Run, RunStatus
from forgeui.runs import registry
from forgeui.runs.exceptions import ForgeUIError
from forgeui.store import DjangoCheckpointStore
from forgeui.web import graphsvg
from runtime import Head

LIVE = {RunStatus.RUNNING, RunStatus.INTERRUPTED, RunStatus.FAILED}


@dataclass
class RunNode:
    run: Run
    pending: list[Interrupt] = field(default_factory=list)
    children: list[RunNode] = field(default_factory=list)
    depth: int = 0
    panels: list[dict[str, Any]] = field(default_factory=list)  # answer panels, by the view
    cancelling: bool = False  # a cancel was asked for and its task has not applied it yet
    recovering: bool = False  # likewise a recover

    @property
    def live(self) -> bool:
        return self.run.status in LIVE

    @property
    def path(self) -> str:
        return "/".join(self.run.namespace) or self.run.run_id

    @property
    def cancel_warning(self) -> str:
        """What the confirmation dialog says a cancel does, and what the parent receives."""
        below = "and every run below it" if self.children else ""
        if self.run.parent_run_id is None:
            return (f"Cancel the whole run {below}? Its pending interrupts end unanswered "
                    f"and it ends with no output.").replace("  ", " ")
        node = self.run.sub_agent_id or self.path
        return (f"Cancel {self.path} {below}? Its pending interrupts end unanswered, and "
                f'the parent receives {{"cancelled": true, "node": "{node}"}} as the '
                f"output of {node}, then goes on.").replace("  ", " ")

    def mark_cancelling(self) -> None:
        """Show a cancel as asked for at once, before its task has run."""
        for node in self.walk():
            if node.live:
                node.cancelling, node.panels = True, []

    @property
    def busy(self) -> bool:
        """Changing without a person: worth polling while the socket has no word of it."""
        return self.run.status == RunStatus.RUNNING or self.cancelling or self.recovering

    def walk(self) -> list[RunNode]:
        return [self, *(node for child in self.children for node in child.walk())]


def build(root_thread_id: str) -> RunNode | None:
    """The tree of ``root_thread_id``; None when no run of it is stored."""
    runs = list(Run.objects.of_tree(root_thread_id))
    if not runs:
        return None
    pending: dict[str, list[Interrupt]] = defaultdict(list)
    for interrupt in Interrupt.objects.of_tree(root_thread_id).pending().by_age():
        pending[interrupt.run_id].append(interrupt)
    nodes = {run.run_id: RunNode(run, pending[run.run_id]) for run in runs}
    roots: list[RunNode] = []
    for node in nodes.values():
        parent = nodes.get(node.run.parent_run_id or "")
        (parent.children if parent else roots).append(node)
    root = next((n for n in roots if n.run.thread_id == root_thread_id), roots[0])
    for orphan in roots:  # a child saved before its parent still shows, under the root
        if orphan is not root:
            root.children.append(orphan)
    _set_depth(root, 0)
    return root


def _set_depth(node: RunNode, depth: int) -> None:
    node.depth = depth
    for child in node.children:
        _set_depth(child, depth + 1)


def paused_inputs(node: RunNode) -> dict[str, Any]:
    """The input each paused task of the run was given, by task id (for edit-then-fork)."""
    latest = DjangoCheckpointStore().load_run_head_sync(node.run.run_id)
    return {task["id"]: task.get("input") for task in latest.engine.tasks} if latest else {}


def fork_edits(root: RunNode) -> tuple[str, ...]:
    """Which changes a fork of this tree may carry (``inputs``, ``answers``)."""
    try:
        executor = registry.executor_for(root.run.graph)
    except ForgeUIError:
        return ()
    return executor.fork_edits


def drawing(root: RunNode) -> tuple[str, str]:
    """The tree's graph as SVG with where it stands marked, or why it cannot be drawn."""
    try:
        executor = registry.executor_for(root.run.graph)
    except ForgeUIError as exc:
        return "", str(exc)
    return graphsvg.draw(executor, marks(root, bool(executor.shape.routed))), ""


def marks(root: RunNode, routed: bool) -> graphsvg.Marks:
    """Where the tree stands, by path below the root graph: paused, running, failed and
    cancelled nodes, and finished runs."""
    paused = {(*i.namespace[1:], i.node) for node in root.walk() for i in node.pending}
    done = {tuple(n.run.namespace[1:]) for n in root.walk()
            if n.depth and n.run.status == RunStatus.COMPLETED}
    store = DjangoCheckpointStore()
    head = store.load_run_head_sync(root.run.run_id)
    done |= _completed(store, head)
    observed: dict[graphsvg.Path, set[graphsvg.Edge]] = (
        {(): _routes_taken(store, head)} if routed and head is not None else {})
    running, cancelled = _task_states(store, root)
    running = (running | working(root)) - done
    failed = {(*n.run.namespace[1:], n.run.error["node"]) for n in root.walk()
              if n.run.status == RunStatus.FAILED and (n.run.error or {}).get("node")}
    return graphsvg.Marks(frozenset(paused), frozenset(done), observed,
                          running=frozenset(running), failed=frozenset(failed),
                          cancelled=frozenset(cancelled))


def _completed(store: DjangoCheckpointStore, head: Head | None) -> set[graphsvg.Path]:
    """The root's nodes that completed, as its head keeps them (their latest outputs). A
    LangGraph run keeps none in forge (its values are ``ForgeSaver``'s), as its head
    says; only a head saved before heads kept them is rebuilt from its history."""
    if head is None or head.metadata.get(langgraph.LANGGRAPH_CHECKPOINT):
        return set()
    if head.engine.outputs is None:
        return _completed_in_history(store, head.id)
    return {(node,) for node in head.engine.outputs}


def _completed_in_history(store: DjangoCheckpointStore, checkpoint_id: str
                          ) -> set[graphsvg.Path]:
    latest = store.load_by_id_sync(checkpoint_id)
    history = latest.history if latest is not None else []
    return {(step["node"],) for step in history if not step.get("cancelled")}


def _task_states(store: DjangoCheckpointStore,
                 root: RunNode) -> tuple[set[graphsvg.Path], set[graphsvg.Path]]:
    """Nodes at work in running runs, and nodes a cancel stopped, from each run's latest
    checkpoint. A task waiting on a sub-agent is left out: the sub-agent's nodes say it."""
    running: set[graphsvg.Path] = set()
    cancelled: set[graphsvg.Path] = set()
    for node in root.walk():
        if node.run.status not in (RunStatus.RUNNING, RunStatus.CANCELLED):
            continue
        latest = store.load_run_head_sync(node.run.run_id)
        for task in latest.engine.tasks if latest else ():
            path = (*node.run.namespace[1:], task["node"])
            if task["status"] == "cancelled":
                cancelled.add(path)
            elif task["status"] == "pending" and node.run.status == RunStatus.RUNNING \
                    and not task.get("child_run_id"):
                running.add(path)
    return running, cancelled


def working(root: RunNode) -> set[tuple[str, ...]]:
    """Nodes whose accepted answer is being (or about to be) worked on."""
    running = [n.run.run_id for n in root.walk() if n.run.status == RunStatus.RUNNING]
    answered = Interrupt.objects.filter(run_id__in=running, answers__applied_at__isnull=True,
                                        answers__isnull=False)
    return {(*namespace[1:], node) for namespace, node
            in answered.values_list("namespace", "node")}


def _routes_taken(store: DjangoCheckpointStore, head: Head) -> set[tuple[str, str]]:
    """Node pairs of consecutive steps: where the root's routes have led so far, as its
    head keeps them (else, for a head saved before, read from every checkpoint)."""
    if head.engine.routes is None:
        return _routes_in_checkpoints(store, head.thread_id)
    return {(a, b) for a, b in head.engine.routes}


def _routes_in_checkpoints(store: DjangoCheckpointStore,
                           thread_id: str) -> set[tuple[str, str]]:
    steps: dict[int, set[str]] = defaultdict(set)
    for cp in store.list_sync(thread_id):
        steps[cp.step].update(task["node"] for task in cp.engine.tasks)
    return {(a, b) for step, names in steps.items() for a in names
            for b in steps.get(step + 1, ())}
