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

Each value is stored once. A task's input is mostly the output of the task before it,
a done task's output is its history entry's, as is each node's latest in ``outputs``:
the stored head names such a value by reference (``"input@": task_id``, the output of
that task) instead of holding it, so a head stays small however large the values it
carries, and a record holds each new value once, in its history entry.

A store also keeps a recent head of each thread whole, with the values its references
name (``"_values"``), so going on with a run reads that head and the few records after it
(``loaded``). Every other checkpoint is rebuilt by replaying records from the thread's
first (``replay``): a linear walk, never needed on the run's hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import _patch, _tree
from ._jsonvalue import SMALL_TEXT, at_most, dumps_proven, json_clone, loads
from ._whole_stores import grown
from .checkpoint import (
    BOOKKEEPING,
    FIELD_NAMES,
    GROWING,
    Additions,
    Checkpoint,
    Draft,
    Growing,
    RunBookkeeping,
    Saved,
)

HEAD_NAMES: tuple[str, ...] = tuple(n for n in FIELD_NAMES if n not in GROWING)
# Each head field and whether the run's bookkeeping holds it (``Head.stored``, unrolled:
# a head is built on every save).
_HEAD_FIELDS = tuple((name, name in BOOKKEEPING) for name in HEAD_NAMES)
# A key ending so holds a reference: the task id whose output the value is.
REF = "@"
# The values a stored head names by reference, in a head kept whole.
VALUES = "_values"
# The task fields, and the head's field, that may name a value by reference.
_TASK_VALUES = ("input", "output")
OUTPUTS = "outputs"  # each node's latest output: its values are named by reference too


@dataclass(frozen=True, slots=True)
class Encoded:
    """One save, ready for a store: the step record (JSON) and the new head, written
    whole only when a store asks for it (``head``)."""

    head_text: Callable[[], str]
    record: str
    base_id: str | None
    # Is the head, written whole, at most SMALL_TEXT long?
    small: bool
    # The interrupts pending in the head this record patches (None: saved whole), so a
    # store mirroring rows can tell new interrupts from kept ones without reading.
    was_pending: frozenset[str] | None = None
    base_run_id: str | None = None  # the run the base head belongs to, when known


def head_of(cp: Draft) -> dict[str, Any]:
    """The checkpoint's head with its values in place (sharing ``cp``'s containers)."""
    engine = cp.engine
    doc = {name: getattr(engine if kept else cp, name) for name, kept in _HEAD_FIELDS}
    doc["_last"] = cp.last_completed
    # What the executor derives from the tasks and interrupts is not stored twice.
    pending_input, payload = _derived(doc)
    if doc["pending_input"] is pending_input:
        del doc["pending_input"]
    if doc["interrupt_payload"] is payload:
        del doc["interrupt_payload"]
    return doc


def _derived(doc: dict[str, Any]) -> tuple[Any, Any]:
    """The paused task's input and the first pending payload, as the executor sets them."""
    waiting = next((t for t in doc.get("tasks", ()) if t.get("status") == "interrupted"), None)
    if doc.get("parent_run_id") is None:
        first = next((i for run in _tree.runs_of(doc) for i in run["interrupts"]), None)
    else:
        first = next(iter(doc.get("interrupts", ())), None)
    return (waiting.get("input") if waiting else None,
            first.get("payload") if first else None)


def by_reference(head: dict[str, Any], known: dict[int, str]) -> tuple[dict[str, Any],
                                                                       dict[str, Any]]:
    """``head`` as stored: each task input or output, the run's output and each node's
    latest output, that is a value ``known`` names (by ``id``: the very object, which
    nothing changes in place) becomes a reference; and the values named."""
    values: dict[str, Any] = {}

    def named(holder: dict[str, Any], key: str) -> dict[str, Any] | None:
        value = holder.get(key)
        ref = known.get(id(value)) if isinstance(value, dict | list) else None
        if ref is None:
            return None
        values[ref] = value
        return {k + REF if k == key else k: ref if k == key else v for k, v in holder.items()}

    doc = dict(head)
    if "tasks" in head:
        tasks = []
        for task in head["tasks"]:
            for key in _TASK_VALUES:
                task = named(task, key) or task
            tasks.append(task)
        doc["tasks"] = tasks
    if head.get(OUTPUTS):
        doc.update(_outputs_by_reference(head[OUTPUTS], known, values))
    return named(doc, "output") or doc, values


def _outputs_by_reference(outputs: dict[str, Any], known: dict[int, str],
                          values: dict[str, Any]) -> dict[str, Any]:
    """The nodes' latest outputs as stored: ``outputs@`` names each node, in order, with
    the task whose output it is (a container ``known`` names), or "" for one kept inline
    in ``outputs``."""
    refs = {node: known.get(id(value), "") if isinstance(value, dict | list) else ""
            for node, value in outputs.items()}
    values.update((ref, outputs[node]) for node, ref in refs.items() if ref)
    inline = {node: outputs[node] for node, ref in refs.items() if not ref}
    return {OUTPUTS: inline, OUTPUTS + REF: refs} if len(inline) < len(refs) else {}


def resolved(doc: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A stored head with its references replaced by the values they name."""
    head = dict(doc)
    if "tasks" in doc:
        head["tasks"] = [_resolved(task, values) for task in doc["tasks"]]
    if OUTPUTS + REF in doc:
        inline = doc.get(OUTPUTS) or {}
        head[OUTPUTS] = {node: values[ref] if ref else inline[node]
                         for node, ref in head.pop(OUTPUTS + REF).items()}
    return _resolved(head, values, ("output",))


def _resolved(holder: dict[str, Any], values: dict[str, Any],
              keys: tuple[str, ...] = _TASK_VALUES) -> dict[str, Any]:
    if not any(key + REF in holder for key in keys):
        return holder
    return {k[:-1] if k[:-1] in keys and k.endswith(REF) else k:
            values[v] if k[:-1] in keys and k.endswith(REF) else v for k, v in holder.items()}


def _refs(doc: dict[str, Any]) -> Iterator[str]:
    for holder in (doc, *doc.get("tasks", ())):
        for key in _TASK_VALUES:
            if key + REF in holder:
                yield holder[key + REF]
    yield from filter(None, doc.get(OUTPUTS + REF, {}).values())


def _saved_as(cp: Draft, base_id: str | None) -> Saved | None:
    """The head saved as ``base_id``, if ``cp`` was built on it."""
    saved = cp.saved
    return saved if saved is not None and base_id is not None and saved.id == base_id else None


def _saved(checkpoint_id: str, doc: dict[str, Any], values: dict[str, Any],
           known: Saved | None = None) -> Saved:
    """What a checkpoint keeps of the head saved as ``checkpoint_id``: its own copy of the
    stored head (small: its values are references), the values it names and their sizes
    (those ``known`` has already measured are not measured again)."""
    text = dumps_proven(doc)
    named = {ref: values[ref] for ref in _refs(doc)}
    sizes = {ref: known.sizes[ref] if known is not None and ref in known.sizes
             else _size(value) for ref, value in named.items()}
    return Saved(checkpoint_id, loads(text), named, text, sizes)


def _size(value: Any) -> int:
    left = at_most(SMALL_TEXT, value)
    return -1 if left < 0 else SMALL_TEXT - left


def _is_small(saved: Saved) -> bool:
    """Is the head, written whole, at most ``SMALL_TEXT`` long (roughly)?"""
    sizes = saved.sizes.values()
    return min(sizes, default=0) >= 0 and len(saved.doc_text) + sum(sizes) <= SMALL_TEXT


def encode(cp: Draft, full: Growing | None = None) -> Encoded:
    """``cp`` as a head and a record against its base; remembers the head as the base
    of the next save (``Draft.saved``). ``full``: the growing fields of a checkpoint
    saved whole (built by hand), instead of what the executor added."""
    base_id = cp.parent_id
    if base_id is None and cp.saved is not None:
        base_id = cp.saved.id  # a fork's first save: a patch against what it copied
    base = _saved_as(cp, base_id)
    # Outputs made since the base, and the values the base names: a value named by an
    # earlier record is named again only by a record that patches that base's head, so
    # a head kept whole and the records after it always hold what they name.
    known = {id(v): ref for ref, v in base.values.items()} if base is not None else {}
    additions = cp.additions
    for entry in additions.history if full is None else ():
        if entry.get("task_id") and not entry.get("cancelled"):
            known[id(entry["output"])] = entry["task_id"]
    doc, values = by_reference(head_of(cp), known)
    record: dict[str, Any] = {"head": {"v": doc} if base is None else _patch.diff(base.doc, doc)}
    if full is None and base_id is None and not additions.reset:
        full = grown(([], {}, []), additions)  # a first checkpoint with nothing before it
    if full is not None:
        history, state, resolved_ = full
        record["full"] = {"history": history, "state": state, "resolved": resolved_}
    else:
        record["add"] = _encode_additions(additions, base)
    saved = cp.saved = _saved(cp.id, doc, values, base or cp.saved)
    was_pending = None if base is None else frozenset(
        i["id"] for i in base.doc.get("interrupts", ()))
    base_run = None if base is None else base.doc.get("run_id")
    return Encoded(lambda: whole_head(saved), dumps_proven(record), base_id, _is_small(saved),
                   was_pending, base_run)


def whole_head(saved: Saved) -> str:
    """The head as a store keeps it whole: the stored head and the values it names."""
    if not saved.values:
        return saved.doc_text
    return dumps_proven({**saved.doc, VALUES: saved.values})


def _inputs(doc: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Each task's input in a stored head, by task id."""
    return {t["id"]: values[t["input" + REF]] if "input" + REF in t else t.get("input")
            for t in doc.get("tasks", ())}


def _encode_additions(additions: Additions, base: Saved | None) -> dict[str, Any]:
    inputs = _inputs(base.doc, base.values) if base is not None else {}
    entries = []
    for entry in additions.history:
        task_id = entry.get("task_id")
        if task_id in inputs and not entry.get("cancelled"):
            patch = _patch.diff(inputs[task_id], entry["output"])
            entries.append({"node": entry["node"], "from": task_id, "p": patch})
        else:
            kept = {k: v for k, v in entry.items() if k != "task_id"}
            if task_id and not entry.get("cancelled"):
                kept["t"] = task_id  # so a head can name this output
            entries.append(kept)
    # An ended interrupt was pending in the base's head: keep only how it ended.
    pending = {i["id"]: i for i in (base.doc if base else {}).get("interrupts", ())}
    ended = [{"from": r["id"], "p": _patch.diff(pending[r["id"]], r)} if r["id"] in pending
             else r for r in additions.resolved]
    encoded: dict[str, Any] = {"h": entries, "r": ended}
    if additions.reset:
        encoded["reset"] = True
    return encoded


@dataclass
class Replayed:
    """A checkpoint rebuilt from records: its stored head, what it has accumulated, and
    every output made so far by task id (what references name: one map for a whole
    replay, which only adds to it, as a task id names one output in a lineage)."""

    head: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(**_fields(resolved(self.head, self.values)), history=self.history,
                          state=self.state, resolved=self.resolved)

    def draft(self, checkpoint_id: str) -> Draft:
        """Its head, ready to go on from: the next save is a patch against it."""
        cp = draft_from(resolved(self.head, self.values))
        cp.saved = _saved(checkpoint_id, self.head, self.values)
        return cp


def replay(records: Iterable[str | dict[str, Any]], start: Replayed | None = None,
           skip: int = 0) -> Iterator[Replayed]:
    """Each checkpoint of a chain of records, oldest first, from ``start`` (the base of
    the first record, or None when it has none). Values the records did not change are
    shared between the checkpoints yielded: copy one before changing it.

    The first ``skip`` records are applied but not yielded; their history grows one list
    in place, so reaching a late checkpoint costs its length, not its length squared.
    """
    current = start
    if current is not None:
        current = Replayed(current.head, current.history, current.state, current.resolved,
                           dict(current.values))
        if skip:
            current.history, current.state = list(current.history), dict(current.state)
            current.resolved = list(current.resolved)
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
    values = prev.values if prev is not None else {}
    head = _patch.apply(prev_head, record["head"])
    if "full" in record:
        full = record["full"]
        if in_place:
            return Replayed(head, list(full["history"]), dict(full["state"]),
                            list(full["resolved"]), values)
        return Replayed(head, full["history"], full["state"], full["resolved"], values)
    added = record["add"]
    if prev is None or added.get("reset"):
        history, state, resolved_ = [], {}, []
    else:
        history, state, resolved_ = prev.history, prev.state, prev.resolved
    if added["h"]:
        if not in_place:
            history, state = list(history), dict(state)
        _add_history(added["h"], _inputs(prev_head, values), values, history, state)
    if added["r"]:
        pending = {i["id"]: i for i in prev_head.get("interrupts", ())}
        ended = [_patch.apply(pending[r["from"]], r["p"]) if "from" in r else r
                 for r in added["r"]]
        if in_place:
            resolved_.extend(ended)
        else:
            resolved_ = [*resolved_, *ended]
    return Replayed(head, history, state, resolved_, values)


def _add_history(entries: list[dict[str, Any]], inputs: dict[str, Any],
                 values: dict[str, Any], history: list[dict[str, Any]],
                 state: dict[str, Any]) -> None:
    """Grow ``history`` and ``state`` by a record's entries, each output rebuilt from the
    input of the task that made it; ``values`` learns each output by task id."""
    for entry in entries:
        if "p" in entry:
            output = _patch.apply(inputs[entry["from"]], entry["p"])
            values[entry["from"]] = output
            entry = {"node": entry["node"], "output": output}
        elif "t" in entry:
            values[entry["t"]] = entry["output"]
            entry = {k: v for k, v in entry.items() if k != "t"}
        history.append(entry)
        if not entry.get("cancelled"):
            state[entry["node"]] = entry["output"]


def _fields(doc: dict[str, Any]) -> dict[str, Any]:
    """A head's fields by name (``Head``'s, the engine's flat) from a stored head with its
    values in place."""
    fields = {name: doc[name] for name in HEAD_NAMES if name in doc}
    pending_input, payload = _derived(doc)
    fields.setdefault("pending_input", pending_input)
    fields.setdefault("interrupt_payload", payload)
    kept = {name: fields.pop(name) for name in BOOKKEEPING if name in fields}
    return {**fields, "engine": RunBookkeeping(**kept)}


def draft_from(doc: dict[str, Any]) -> Draft:
    """The executor's head from a stored head with its values in place."""
    return Draft(**_fields(doc), last_completed=doc.get("_last"))


def copy_head(src: Draft) -> Draft:
    """A new head with ``src``'s (its own containers, sharing the values kept once): saved,
    it is a record against ``src``, whose history it shares however long it is."""
    base = _saved_as(src, src.id)
    known = {id(v): ref for ref, v in base.values.items()} if base is not None else {}
    doc, values = by_reference(head_of(src), known)
    cp = draft_from(resolved(json_clone(doc), values))
    cp.saved = base
    return cp


def loaded(head_text: str, checkpoint_id: str, after: Iterable[str] = ()) -> Draft:
    """The latest head of a thread, ready for the executor to go on from (its next save is
    a patch against it): a stored head, brought up to date by the records ``after`` it
    when it is an earlier checkpoint's."""
    doc = loads(head_text)
    current = Replayed(doc, values=doc.pop(VALUES, {}))
    for raw in after:
        current = _step(current, loads(raw), in_place=True)
    return current.draft(checkpoint_id)
