"""Step records: how a store keeps a thread at the cost of what each step wrote.

A checkpoint has two parts. Its *head* is what a run needs to go on (tasks and their
inputs, pending interrupts, answers, the tree's children, ...); its *history* (``history``,
``state`` and ``resolved``) only grows. A store keeps, per checkpoint, one record:

- its base (kept by the store beside the record): the checkpoint it follows, its parent
  or, for a fork's first checkpoint, the checkpoint it was forked from, in another thread;
- ``head``: a patch (``_patch``) of the head against the base's head;
- ``add``: the history entries and ended interrupts of this step, each output a patch
  against the input of the task that made it, or ``full``: the whole history, for a
  checkpoint built by hand rather than by the executor.

A store also keeps one recent head of each thread whole, so going on with a run reads
that head and the few records after it (``loaded``). Every other checkpoint is
rebuilt by replaying records from the thread's first (``Replay``): a linear walk, never
needed on the run's hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import _patch, _tree
from ._jsonvalue import SMALL_TEXT, KnownTexts, dumps_framed, dumps_proven, loads
from .checkpoint import FIELD_NAMES, GROWING, Additions, Checkpoint, Growing

HEAD_NAMES: tuple[str, ...] = tuple(n for n in FIELD_NAMES if n not in GROWING)


@dataclass(frozen=True, slots=True)
class Encoded:
    """One save, ready for a store: the new head (JSON) and the step record (JSON)."""

    head: str
    record: str
    base_id: str | None
    # The interrupts pending in the head this record patches (None: saved whole), so a
    # store mirroring rows can tell new interrupts from kept ones without reading.
    was_pending: frozenset[str] | None = None
    base_run_id: str | None = None  # the run the base head belongs to, when known


def is_fork_start(cp: Checkpoint, encoded: Encoded) -> bool:
    """A fork's first checkpoint: a store need not keep its head, which its record and
    the original's rebuild (so a fork writes almost nothing)."""
    return cp.parent_id is None and encoded.base_id is not None


def head_of(cp: Checkpoint) -> dict[str, Any]:
    doc = {name: cp.stored(name) for name in HEAD_NAMES}
    doc["_last"] = cp.last_completed
    # What the executor derives from the tasks and interrupts is not stored twice.
    pending_input, payload = _derived(doc)
    if doc["pending_input"] is pending_input:
        del doc["pending_input"]
    if doc["interrupt_payload"] is payload:
        del doc["interrupt_payload"]
    return doc


# A task's input and output. The executor replaces them but never changes one in place,
# and a node that changes its lent input has it put back, so a snapshot may share them.
_SHARED_TASK_VALUES = ("input", "output")


def snapshot(head: dict[str, Any], head_text: str | None = None,
             ) -> Callable[[], dict[str, Any]]:
    """A copy of ``head`` that the executor's later changes to it cannot reach, built when
    first needed: its own containers, sharing only each task's input and output, which
    are the large part and make an unchanged input the same object in the next save's
    diff. What it copies is taken now, as JSON text; most runs end before reading it.
    ``head_text``, the head's own JSON when at hand: a small head is read again from it."""
    if head_text is not None and len(head_text) <= SMALL_TEXT:
        return partial(loads, head_text)
    skeleton, shared = dict(head), []
    if "tasks" in head:
        skeleton["tasks"] = [{key: value for key, value in task.items()
                              if key not in _SHARED_TASK_VALUES} for task in head["tasks"]]
        shared = [{key: task[key] for key in _SHARED_TASK_VALUES if key in task}
                  for task in head["tasks"]]
    return partial(_with_shared_values, dumps_proven(skeleton), shared)


def _head_text(head: dict[str, Any], texts: KnownTexts) -> str:
    """The head's JSON, its tasks' inputs and outputs written from their known texts."""
    tasks = head.get("tasks") or ()
    values = [task[key] for task in tasks for key in _SHARED_TASK_VALUES if key in task]
    texts.keep_only(values)
    if not any(texts.large(value) for value in values):
        return dumps_proven(head)
    framed = dict(head)
    framed["tasks"] = [{key: texts.framed(value) if key in _SHARED_TASK_VALUES else value
                        for key, value in task.items()} for task in tasks]
    return dumps_framed(framed) or dumps_proven(head)


def _with_shared_values(skeleton_text: str, shared: list[dict[str, Any]]) -> dict[str, Any]:
    copy: dict[str, Any] = loads(skeleton_text)
    for task, values in zip(copy.get("tasks", ()), shared, strict=True):
        task.update(values)
    return copy


def _derived(doc: dict[str, Any]) -> tuple[Any, Any]:
    """The paused task's input and the first pending payload, as the executor sets them."""
    waiting = next((t for t in doc.get("tasks", ()) if t.get("status") == "interrupted"), None)
    if doc.get("parent_run_id") is None:
        first = next((i for run in _tree.runs_of(doc) for i in run["interrupts"]), None)
    else:
        first = next(iter(doc.get("interrupts", ())), None)
    return (waiting.get("input") if waiting else None,
            first.get("payload") if first else None)


def encode(cp: Checkpoint) -> Encoded:
    """``cp`` as a head and a record against its base; remembers the head as the base
    of the next save (``Checkpoint.saved``)."""
    head = head_of(cp)
    head_text = _head_text(head, cp.texts)
    base_id = cp.parent_id if cp.parent_id is not None else cp.forked_from_base
    base_head = cp.base_head(base_id)
    record: dict[str, Any] = {}
    memo: _patch.Memo = {}
    if base_head is not None:
        record["head"] = _patch.diff(base_head, head, memo)
    else:
        record["head"] = {"v": head}
    additions = cp.additions
    if additions is None or (base_id is None and not additions.reset):
        history, state, resolved = cp.history, cp.state, cp.resolved
        record["full"] = {"history": history, "state": state, "resolved": resolved}
    else:
        record["add"] = _encode_additions(additions, base_head, memo)
    cp.remember_head(snapshot(head, head_text))
    was_pending = None if base_head is None else frozenset(
        i["id"] for i in base_head.get("interrupts", ()))
    base_run = None if base_head is None else base_head.get("run_id")
    return Encoded(head_text, dumps_proven(record), base_id, was_pending, base_run)


def _encode_additions(additions: Additions, base_head: dict[str, Any] | None,
                      memo: _patch.Memo) -> dict[str, Any]:
    inputs = {t["id"]: t.get("input") for t in (base_head or {}).get("tasks", ())}
    entries = []
    for entry in additions.history:
        task_id = entry.get("task_id")
        if task_id in inputs and not entry.get("cancelled"):
            patch = _patch.diff(inputs[task_id], entry["output"], memo)
            entries.append({"node": entry["node"], "from": task_id, "p": patch})
        else:
            entries.append({k: v for k, v in entry.items() if k != "task_id"})
    # An ended interrupt was pending in the base's head: keep only how it ended.
    pending = {i["id"]: i for i in (base_head or {}).get("interrupts", ())}
    ended = [{"from": r["id"], "p": _patch.diff(pending[r["id"]], r)} if r["id"] in pending
             else r for r in additions.resolved]
    encoded: dict[str, Any] = {"h": entries, "r": ended}
    if additions.reset:
        encoded["reset"] = True
    return encoded


@dataclass
class Replayed:
    """A checkpoint rebuilt from records: its head and what it has accumulated."""

    head: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    resolved: list[dict[str, Any]] = field(default_factory=list)

    def checkpoint(self) -> Checkpoint:
        return from_head(self.head, (self.history, self.state, self.resolved))


def replay(records: Iterable[str | dict[str, Any]], start: Replayed | None = None,
           skip: int = 0) -> Iterator[Replayed]:
    """Each checkpoint of a chain of records, oldest first, from ``start`` (the base of
    the first record, or None when it has none). Values the records did not change are
    shared between the checkpoints yielded: copy one before changing it.

    The first ``skip`` records are applied but not yielded; their history grows one list
    in place, so reaching a late checkpoint costs its length, not its length squared.
    """
    current = start
    if skip and current is not None:
        current = Replayed(current.head, list(current.history), dict(current.state),
                           list(current.resolved))
    for index, raw in enumerate(records):
        record = loads(raw) if isinstance(raw, str) else raw
        if index < skip:
            current = _step(current, record, in_place=True)
            continue
        current = _step(current, record)
        yield current


def _step(prev: Replayed | None, record: dict[str, Any], in_place: bool = False) -> Replayed:
    """``prev`` moved on by one record; ``in_place``: ``prev``'s lists are the replay's
    own, to grow rather than copy."""
    prev_head = prev.head if prev is not None else {}
    head = _patch.apply(prev_head, record["head"])
    if "full" in record:
        full = record["full"]
        if in_place:
            return Replayed(head, list(full["history"]), dict(full["state"]),
                            list(full["resolved"]))
        return Replayed(head, full["history"], full["state"], full["resolved"])
    added = record["add"]
    if prev is None or added.get("reset"):
        history, state, resolved = [], {}, []
    else:
        history, state, resolved = prev.history, prev.state, prev.resolved
    inputs = {t["id"]: t.get("input") for t in prev_head.get("tasks", ())}
    if added["h"]:
        if not in_place:
            history, state = list(history), dict(state)
        for entry in added["h"]:
            if "p" in entry:
                entry = {"node": entry["node"], "output": _patch.apply(inputs[entry["from"]],
                                                                       entry["p"])}
            history.append(entry)
            if not entry.get("cancelled"):
                state[entry["node"]] = entry["output"]
    if added["r"]:
        pending = {i["id"]: i for i in prev_head.get("interrupts", ())}
        ended = [_patch.apply(pending[r["from"]], r["p"]) if "from" in r else r
                 for r in added["r"]]
        if in_place:
            resolved.extend(ended)
        else:
            resolved = [*resolved, *ended]
    return Replayed(head, history, state, resolved)


def from_head(doc: dict[str, Any], growing: Growing | Callable[[], Growing]) -> Checkpoint:
    """A checkpoint from its head; ``growing`` is its history, state and resolved, or a
    function that builds them when first read."""
    fields = {name: doc[name] for name in HEAD_NAMES if name in doc}
    pending_input, payload = _derived(doc)
    fields.setdefault("pending_input", pending_input)
    fields.setdefault("interrupt_payload", payload)
    cp = Checkpoint.with_growing(fields, growing)
    cp.last_completed = doc.get("_last")
    return cp


def copy_head(src: Checkpoint) -> Checkpoint:
    """A new checkpoint with ``src``'s head (a deep copy) and, shared, its history: saved,
    it is a record against ``src`` however long its history is."""
    text = dumps_proven(head_of(src))
    doc = loads(text)
    cp = from_head(doc, src.growing_source())
    cp.forked_from_base = src.id
    cp.remember_head(snapshot(doc, text), src.id)
    return cp


def loaded(head_text: str, checkpoint_id: str, growing: Growing | Callable[[], Growing],
           after: Iterable[str] = ()) -> Checkpoint:
    """The latest checkpoint of a thread, ready for the executor to go on from (its next
    save is a patch against its head): a stored head, brought up to date by the head
    patches of the records ``after`` it when it is an earlier checkpoint's."""
    doc = loads(head_text)
    text: str | None = head_text
    for raw in after:
        doc, text = _patch.apply(doc, loads(raw)["head"]), None
    # Taken before the executor changes what the checkpoint shares with doc.
    base = snapshot(doc, text)
    cp = from_head(doc, growing)
    cp.remember_head(base, checkpoint_id)
    return cp


def from_full_copies(docs: Iterable[dict[str, Any]]) -> Iterator[Encoded]:
    """Records for one thread kept the old way, as whole checkpoints (``to_dict``),
    oldest first: each keeps only what it added to its parent where that holds."""
    prev: Checkpoint | None = None
    for doc in docs:
        cp = Checkpoint.from_dict(doc)
        history, state, resolved = cp.history, cp.state, cp.resolved
        if history:
            last = history[-1]
            done = next((t["id"] for t in reversed(cp.engine.tasks) if t["node"] == last["node"]),
                        None)
            cp.last_completed = {"node": last["node"], "task_id": done,
                                 "cancelled": bool(last.get("cancelled"))}
        additions = _added_since(prev, cp) if prev is not None else None
        if additions is not None:
            cp.additions = additions
            assert prev is not None and prev._base is not None
            cp.remember_head(prev._base[1], prev.id)
        elif not (history or state or resolved):
            cp.additions = Additions(reset=True)
        encoded = encode(cp)
        yield encoded
        cp.__dict__.update(_history=history, _state=state, _resolved=resolved)
        prev = cp


def _added_since(prev: Checkpoint, cp: Checkpoint) -> Additions | None:
    """What ``cp`` added to ``prev``'s growing fields, if it only added."""
    if cp.parent_id != prev.id:
        return None
    old_h, old_r = prev.__dict__["_history"], prev.__dict__["_resolved"]
    new_h, new_r = cp.history, cp.resolved
    if not (_patch.same(old_h, new_h[:len(old_h)]) and _patch.same(old_r, new_r[:len(old_r)])):
        return None
    state = dict(prev.__dict__["_state"])
    for entry in new_h[len(old_h):]:
        if not entry.get("cancelled"):
            state[entry["node"]] = entry["output"]
    if not _patch.same(state, cp.state):
        return None
    return Additions(history=new_h[len(old_h):], resolved=new_r[len(old_r):])
