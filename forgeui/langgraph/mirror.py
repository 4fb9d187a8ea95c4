"""Where a LangGraph thread stands, as the forge checkpoint the dashboard reads.

After each ``invoke`` the graph's state (``get_state(subgraphs=True)``) is saved as the
next head of the same forge thread (a ``Draft``, as a forge graph saves each step): its
status, pending interrupts (each with its checkpoint namespace, node, task id, LangGraph
interrupt id and checkpoint id), the LangGraph checkpoint it stands for, and the
interrupts that ended as the step's additions. The graph's values are not copied: they
are kept once, by ``ForgeSaver`` (``values_at`` reads them back); only a completed run's
output holds them. ``DjangoCheckpointStore.save_head`` writes the step's record with the
``Run`` and ``Interrupt`` rows and the inbox events in one transaction, so the inbox, the
timeline, claims, audit and the API need nothing of their own.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from typing import Any

from langgraph.types import StateSnapshot

from forgeui.langgraph import LANGGRAPH_CHECKPOINT, percall
from runtime import Draft, Head
from runtime.checkpoint import Additions
from runtime.types import RunStatus

# The head's metadata key counting the interrupts that ended, by LangGraph interrupt id,
# for each task the thread may still run: LangGraph gives every interrupt of one task the
# same id, and forge numbers the later ones (``forge_id``).
ENDED = "langgraph_ended"
Counts = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class Controls:
    """What the graph's registration, never a payload, says of each interrupt: a
    deadline, and the answer given when it passes (``has_default``)."""

    deadline_s: float | None = None
    has_default: bool = False
    default: Any = None

    @classmethod
    def of(cls, config: dict[str, Any] | None) -> Controls:
        """From ``graph.with_config(metadata={"forge": {"deadline_s": ..., "default":
        ...}})``: graph-level settings, as LangGraph's ``interrupt()`` takes none."""
        forge = ((config or {}).get("metadata") or {}).get("forge") or {}
        deadline = forge.get("deadline_s")
        return cls(float(deadline) if isinstance(deadline, int | float) else None,
                   "default" in forge, forge.get("default"))

    def apply(self, record: dict[str, Any]) -> None:
        if self.deadline_s is not None:
            record["deadline_at"] = record["created_at"] + int(self.deadline_s * 1000)
            record["has_default"], record["default"] = self.has_default, self.default


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an ``invoke`` ended, beside the state it left."""

    error: dict[str, Any] | None = None
    cancelled: bool = False


def plain(value: Any) -> Any:
    """``value`` as JSON data: a graph's state may hold messages and other objects, which
    forge's records show as their ``model_dump()`` (or fields, or text)."""
    return json.loads(json.dumps(value, default=_plain_part, allow_nan=False))


def _plain_part(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return repr(obj)


def checkpoint_id_of(snapshot: StateSnapshot) -> str:
    """The LangGraph checkpoint the snapshot shows ("" before the thread has one)."""
    return str((snapshot.config or {}).get("configurable", {}).get("checkpoint_id") or "")


def pending_interrupts(snapshot: StateSnapshot, before: Head | None, graph: str,
                       run_id: str, breakpoints: frozenset[str],
                       controls: Controls = Controls(),
                       answered: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Every interrupt the thread waits on, subgraphs' included, as interrupt records.
    One still pending from ``before`` keeps its record (its age and deadline). One of
    ``answered`` (just resumed) that LangGraph still shows failed to take its answer: its
    row stays answered, and should the graph ask it again, that is a new row."""
    checkpoint_id = checkpoint_id_of(snapshot)
    if not checkpoint_id:
        return []
    found = _task_interrupts(snapshot, graph, run_id, checkpoint_id, "")
    if not found and snapshot.next and not _failed(snapshot):
        found.append(_breakpoint(snapshot, graph, run_id, checkpoint_id, breakpoints))
    raw = {r["id"] for r in found}
    counts = ended_counts(before, [r for r in (before.interrupts if before else ())
                                   if langgraph_id(r["id"]) not in raw])
    by_id: dict[str, int] = {}
    for ids in counts.values():
        for key, n in ids.items():
            by_id[key] = by_id.get(key, 0) + n
    by_task = {task: sum(ids.values()) for task, ids in counts.items()}
    kept = {r["id"]: r for r in before.interrupts} if before is not None else {}
    for record in found:
        if record["kind"] == "node":
            record["order"] = by_task.get(record["task_id"], 0)
            record["id"] = forge_id(record["id"], by_id.get(record["id"], 0))
        if record["id"] in kept:
            record["created_at"] = kept[record["id"]].get("created_at", record["created_at"])
        controls.apply(record)
    return [record for record in found if record["id"] not in answered]


def forge_id(langgraph_id: str, answered: int) -> str:
    """The interrupt's LangGraph id; should LangGraph hand out an id that was answered
    already, forge's row (one per pause) gets it numbered after the earlier ones."""
    return langgraph_id if answered == 0 else f"{langgraph_id}.{answered}"


def langgraph_id(interrupt_id: str) -> str:
    """The LangGraph interrupt id a forge interrupt id stands for."""
    return interrupt_id.split(".", 1)[0]


def ended_counts(before: Head | None, ending: list[dict[str, Any]]) -> Counts:
    """The interrupts ended by task and LangGraph id: those ``before`` counted, and
    ``ending`` (pending in ``before``, ending now)."""
    kept = (before.metadata.get(ENDED) or {}) if before is not None else {}
    counts = {task: dict(ids) for task, ids in kept.items()}
    for record in ending:
        if record.get("kind", "node") == "node":
            ids = counts.setdefault(record["task_id"], {})
            key = langgraph_id(record["id"])
            ids[key] = ids.get(key, 0) + 1
    return counts


def _live_tasks(snapshot: StateSnapshot) -> set[str]:
    """Every task the snapshot shows, its subgraphs' included: those that may still ask."""
    found = set()
    for task in snapshot.tasks:
        found.add(task.id)
        if isinstance(task.state, StateSnapshot):
            found |= _live_tasks(task.state)
    return found


def _task_interrupts(snapshot: StateSnapshot, graph: str, run_id: str, checkpoint_id: str,
                     ns: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for task in snapshot.tasks:
        if isinstance(task.state, StateSnapshot):  # a subgraph: its own tasks interrupt
            inner_ns = task.state.config["configurable"].get("checkpoint_ns", "")
            found += _task_interrupts(task.state, graph, run_id, checkpoint_id, inner_ns)
            continue
        for order, pending in enumerate(task.interrupts):
            value = percall.presented(pending.value, pending.response_schema)
            found.append(_record(pending.id, task.name, task.id, value, order,
                                 graph, run_id, checkpoint_id, ns))
    return found


def _breakpoint(snapshot: StateSnapshot, graph: str, run_id: str, checkpoint_id: str,
                breakpoints: frozenset[str]) -> dict[str, Any]:
    """A static breakpoint (``interrupt_before`` / ``_after``): one interrupt for the step."""
    node = snapshot.next[0]
    kind = "before" if node in breakpoints else "after"
    task_id = snapshot.tasks[0].id if snapshot.tasks else ""
    payload = {"kind": kind, "node": node, "input": plain(snapshot.values)}
    record = _record(f"{checkpoint_id}.{kind}", node, task_id, payload, 0, graph, run_id,
                     checkpoint_id, "")
    record["kind"] = kind
    return record


def _record(interrupt_id: str, node: str, task_id: str, payload: Any, order: int,
            graph: str, run_id: str, checkpoint_id: str, ns: str) -> dict[str, Any]:
    return {"id": interrupt_id, "node": node, "task_id": task_id, "payload": plain(payload),
            "order": order, "namespace": namespace_of(graph, ns), "run_id": run_id,
            "sub_agent_id": None, "checkpoint_id": checkpoint_id, "kind": "node",
            "created_at": int(time.time() * 1000)}


def namespace_of(graph: str, checkpoint_ns: str) -> list[str]:
    """The run-tree path: the graph, then each part of the LangGraph checkpoint namespace."""
    return [graph, *checkpoint_ns.split("|")] if checkpoint_ns else [graph]


def _failed(snapshot: StateSnapshot) -> bool:
    return any(task.error for task in snapshot.tasks)


def status_of(snapshot: StateSnapshot, pending: list[dict[str, Any]],
              outcome: Outcome) -> RunStatus:
    if outcome.cancelled:
        return "cancelled"
    if outcome.error is not None:
        return "failed"
    if pending:
        return "interrupted"
    return "running" if snapshot.next else "completed"


def following(snapshot: StateSnapshot, before: Draft, *, pending: list[dict[str, Any]],
              outcome: Outcome) -> Draft:
    """The head that follows ``before``, as one step: what changed, and the interrupts
    that ended as its additions."""
    lg_id = checkpoint_id_of(snapshot)
    status = status_of(snapshot, pending, outcome)
    still = {record["id"] for record in pending}
    now = int(time.time() * 1000)
    ending = [record for record in before.interrupts if record["id"] not in still]
    counts = ended_counts(before, ending)
    if snapshot.config is not None:  # a task no longer shown never asks again
        live = _live_tasks(snapshot)
        counts = {task: ids for task, ids in counts.items() if task in live}
    output = None
    if status == "completed":
        output = plain(snapshot.values) if isinstance(snapshot.values, dict) else {}
    draft = dataclasses.replace(
        before, id=_new_id(lg_id, before), parent_id=before.id,
        node=pending[0]["node"] if pending else None,
        interrupt_payload=pending[0]["payload"] if pending else None, pending_input=None,
        created_at=now, status=status, step=before.step + 1,
        interrupts=[] if outcome.cancelled else pending, output=output, error=outcome.error,
        metadata={**before.metadata, LANGGRAPH_CHECKPOINT: lg_id, ENDED: counts},
        additions=Additions(), last_completed=None)
    draft.add_resolved([{**record, "answered_at": now,
                         "status": "cancelled" if outcome.cancelled else "answered"}
                        for record in ending])
    return draft


def _new_id(lg_id: str, before: Head | None) -> str:
    """The LangGraph checkpoint's id, unless the thread mirrored that one already (a
    resume that left the step paused writes no new LangGraph checkpoint)."""
    if before is None or not lg_id:
        return lg_id or f"forge-{time.time_ns()}"
    if before.metadata.get(LANGGRAPH_CHECKPOINT) != lg_id:
        return lg_id
    return f"{lg_id}.{before.step + 1}"
