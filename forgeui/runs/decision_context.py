"""What a reviewer needs beside the question: the run's input, the paused node's input,
the latest state and the steering notes already given to the run.

Checkpoint content is read only through the ``runtime.Head`` the store returns
(``paused_heads``): the thread's latest head, read as a run goes on from it, not rebuilt
from the thread's records; an earlier checkpoint's only for an interrupt no longer
pending. The state is a LangGraph thread's values, read where ``ForgeSaver`` keeps them,
or a forge graph's latest output of each node, which its head keeps. The run's input
comes from the ``Run`` row, which keeps what its first checkpoint was started with; the
whole ``history`` is read only for a head saved before heads kept the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forgeui import langgraph
from forgeui.models import Interrupt, Run, SteeringNote
from forgeui.runs.services.forking import links as forks
from forgeui.store import DjangoCheckpointStore
from runtime import Head


@dataclass(frozen=True, slots=True)
class StateEntry:
    key: str
    value: Any
    named: bool  # the payload names this key: it comes first


@dataclass(frozen=True, slots=True)
class Decision:
    graph: str
    run_input: Any
    node_input: Any
    has_node_input: bool
    state: list[StateEntry] = field(default_factory=list)
    state_checkpoint: str = ""
    notes: list[SteeringNote] = field(default_factory=list)


def paused_heads(interrupt: Interrupt) -> tuple[Head | None, Head | None]:
    """The head the interrupt's task input is read from, and its thread's latest: the
    same while the interrupt is pending there (its task and input are unchanged since it
    was raised), else the head of the checkpoint it was raised at.

    With ``latest_state``, the one place this module reads checkpoints.
    """
    store = DjangoCheckpointStore()
    latest = store.load_head_sync(interrupt.thread_id)
    if latest is not None and (latest.id == interrupt.checkpoint_id or any(
            record["id"] == interrupt.pk for record in latest.interrupts)):
        return latest, latest
    return store.load_head_by_id_sync(interrupt.checkpoint_id), latest


def latest_state(latest: Head) -> dict[str, Any]:
    """The state at the thread's latest checkpoint: a LangGraph graph's values, or a
    forge graph's latest output of each node, as its head keeps them."""
    mirrored = latest.metadata.get(langgraph.LANGGRAPH_CHECKPOINT)
    if mirrored:
        return langgraph.values_at(latest.thread_id, mirrored) or {}
    if latest.engine.outputs is not None:
        return latest.engine.outputs
    whole = DjangoCheckpointStore().load_by_id_sync(latest.id)  # a head kept no outputs
    return whole.state if whole is not None else {}


def node_input(paused: Head | None, task_id: str) -> tuple[bool, Any]:
    """The input flowing into the paused task (its task record, else ``pending_input``)."""
    if paused is None:
        return False, None
    for task in paused.engine.tasks:
        if task.get("id") == task_id and "input" in task:
            return True, task["input"]
    return True, paused.pending_input


def ordered_state(state: dict[str, Any], payload: Any) -> list[StateEntry]:
    """State entries, those whose key the payload names (as a key or a value) first."""
    named = payload_words(payload)
    entries = [StateEntry(str(key), value, str(key) in named) for key, value in state.items()]
    return sorted(entries, key=lambda entry: not entry.named)


def payload_words(payload: Any) -> set[str]:
    if isinstance(payload, dict):
        words = {str(key) for key in payload}
        for value in payload.values():
            words |= payload_words(value) if isinstance(value, dict | list) else {str(value)}
        return words
    if isinstance(payload, list):
        return set().union(*(payload_words(item) for item in payload)) if payload else set()
    return {str(payload)}


def run_input(run: Run) -> Any:
    """What the run was started with; a fork's copy taken past its first step knows it
    only from the run it was forked from (forks made before their rows were given it)."""
    if run.input is not None:
        return run.input
    link = forks.origin(run.root_thread_id)
    while link is not None:
        found = (Run.objects.filter(root_thread_id=link.source_thread_id,
                                    namespace=run.namespace)
                 .values_list("input", flat=True).first())
        if found is not None:
            return found
        link = forks.origin(link.source_thread_id)
    return None


def for_interrupt(interrupt: Interrupt) -> Decision:
    """Everything the context panel shows for ``interrupt`` (its ``run`` loaded)."""
    paused, latest = paused_heads(interrupt)
    known, given = node_input(paused, interrupt.task_id)
    notes = (SteeringNote.objects.filter(run_id=interrupt.run_id).select_related("user")
             .order_by("created_at"))
    return Decision(
        graph=interrupt.run.graph, run_input=run_input(interrupt.run), node_input=given,
        has_node_input=known,
        state=(ordered_state(latest_state(latest), interrupt.payload)
               if latest is not None else []),
        state_checkpoint=latest.id if latest is not None else "", notes=list(notes),
    )
