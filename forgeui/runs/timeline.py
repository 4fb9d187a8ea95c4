"""A thread's history for auditors: per checkpoint what happened and who did it.

The checkpoint says what the runtime saw (node, interrupts raised and resolved, state);
the ``Answer``, ``Approval`` and ``SteeringNote`` rows say who answered, approved or
steered, and when. Each
entry compares its state with the previous checkpoint's, key by key (a key is a node).
The same entries feed the page and the JSON export.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from django.utils import timezone

from forgeui import langgraph
from forgeui.models import Answer, Approval, Run, SteeringNote
from forgeui.runs.services.forking import wording as fork_start
from forgeui.runs.wording import answer_words, record_summary
from forgeui.store import DjangoCheckpointStore
from forgeui.store.pages import ThreadPages
from forgeui.store.rows import from_ms
from forgeui.team.sensitive import mask
from runtime.checkpoint import Checkpoint as RuntimeCheckpoint
from runtime.store_kit import json_text, patch_of

# A value longer than this (as compact JSON) is not shown whole on every entry: a change
# to it shows what changed, and the full state is a link to the checkpoint.
SHOWN_WHOLE = 4000


@dataclass
class Change:
    key: str
    kind: str  # "added" | "removed" | "changed"
    before: Any = None
    after: Any = None
    # For a change to a large value: only what changed (``readable_patch``), else None.
    what: Any = None


@dataclass
class Resolution:
    interrupt_id: str
    node: str
    status: str
    answer: Any
    answered_by: str | None
    answered_at: str | None
    steering: str = ""  # the answerer's own note
    summary: str = ""  # what was asked, in one line
    answer_text: str = ""  # the answer in words ("Approved", "Edited: to → …")
    # Under a policy: each counted vote, {"user", "vote", "at", "note"}, oldest first.
    approvals: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Note:
    text: str
    by: str | None
    at: str
    interrupt_id: str | None


@dataclass
class Entry:
    seq: int
    checkpoint_id: str
    run_id: str
    node: str
    status: str
    created_at: str
    raised: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[Resolution] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    diff: list[Change] = field(default_factory=list)
    forked_from: str | None = None
    state: dict[str, Any] = field(default_factory=dict)  # the whole state at this point
    input: Any = None  # the run's input, on a run's first checkpoint
    namespace: list[str] = field(default_factory=list)
    thread_id: str = ""
    error: dict[str, Any] | None = None  # why it failed, where something did
    next_step: str = ""  # on a fork's first checkpoint: what resuming it does

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def state_is_small(self) -> bool:
        """Small enough to show whole on the page (else it links to the checkpoint)."""
        return _is_small(self.state)


def _is_small(value: Any) -> bool:
    return len(json_text(value)) <= SHOWN_WHOLE


def state_diff(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """What changed between two states, one change per top-level key."""
    changes = [Change(key, "added", after=after[key]) for key in after if key not in before]
    changes += [Change(key, "removed", before=before[key]) for key in before if key not in after]
    changes += [_changed(key, before[key], after[key])
                for key in after if key in before and before[key] != after[key]]
    return sorted(changes, key=lambda change: change.key)


def _changed(key: str, before: Any, after: Any) -> Change:
    if _is_small(before) and _is_small(after):
        return Change(key, "changed", before, after)
    return Change(key, "changed", before, after, what=readable_patch(patch_of(before, after)))


def readable_patch(patch: dict[str, Any] | None) -> Any:
    """A structural patch (``runtime.store_kit.patch_of``) as an auditor reads it: items appended,
    keys changed or removed, list items changed, or the new value."""
    if patch is None:
        return None
    if "v" in patch:
        return {"now": patch["v"]}
    if "a" in patch:
        return {"appended": patch["a"]}
    if "l" in patch:
        return {f"[{index}]": readable_patch(item) for index, item in patch["l"].items()}
    readable = {key: readable_patch(item) for key, item in patch["d"].items()}
    if patch.get("x"):
        readable["removed keys"] = patch["x"]
    return readable


def tree_history(root_thread_id: str, sub_agent: str = "",
                 keys: frozenset[str] = frozenset()) -> list[Entry]:
    """Every run of a tree, its entries interleaved by time (oldest first), each with its
    namespace; ``sub_agent`` keeps one sub-agent's runs (and those below it); ``keys``
    as for ``entries``."""
    runs = Run.objects.of_tree(root_thread_id).values_list("thread_id", "namespace")
    threads = list(dict.fromkeys(
        thread for thread, namespace in runs if not sub_agent or sub_agent in namespace[1:]))
    found = [entry for thread in threads for entry in entries(thread, keys=keys)]
    return sorted(found, key=lambda entry: (entry.created_at, len(entry.namespace)))


def pages(thread_id: str, newest_first: bool = False,
          keys: frozenset[str] = frozenset()) -> ThreadPages:
    """The thread's entries for a paginator: a page rebuilds only the records it needs."""
    store = DjangoCheckpointStore()
    return ThreadPages(store.count_sync(thread_id), partial(entries, thread_id, keys=keys),
                       newest_first)


def entries(thread_id: str, first: int = 1, last: int | None = None,
            keys: frozenset[str] = frozenset()) -> list[Entry]:
    """The checkpoints of ``thread_id`` at positions ``first`` to ``last`` (default: all),
    oldest first, with answers and notes placed; the payload, input, state and answer
    entries named in ``keys`` (sensitive ones, for a reader who may not see them) masked
    before anything is summed up from them."""
    checkpoints = masked(DjangoCheckpointStore().list_sync(thread_id, max(first - 1, 1), last),
                         keys)
    ended = [_ended(cp, prev) for prev, cp in zip([None, *checkpoints], checkpoints, strict=False)]
    answers = _answers({r["id"] for records in ended for r in records})
    counted = Approval.objects.counted_for(answers.values())
    inputs = {run_id: mask(given, keys) for run_id, given
              in Run.objects.filter(thread_id=thread_id).values_list("run_id", "input")}
    previous: RuntimeCheckpoint | None = None
    states = [mask(langgraph.shown_state(cp), keys) for cp in checkpoints]
    result = []
    for index, (cp, records) in enumerate(zip(checkpoints, ended, strict=True)):
        seq = _place(cp)
        if seq >= first:
            before = states[index - 1] if index else {}
            result.append(_entry(seq, cp, previous, records, answers, inputs.get(cp.run_id),
                                 counted, (before, states[index])))
        previous = cp
    before = checkpoints[0].created_at if first > 1 and checkpoints else None
    checkpoints = checkpoints[-len(result):] if result else []
    more = bool(checkpoints) and _place(checkpoints[-1]) < DjangoCheckpointStore().count_sync(
        thread_id)
    _place_notes(result, checkpoints, before, checkpoints[-1].created_at if more else None)
    return result


def masked(checkpoints: list[RuntimeCheckpoint],
           keys: frozenset[str]) -> list[RuntimeCheckpoint]:
    """Copies of ``checkpoints`` with ``keys`` masked wherever people read them (the
    stored checkpoints keep them whole)."""
    if not keys:
        return checkpoints
    return [replace(cp, state=mask(cp.state, keys), interrupts=mask(cp.interrupts, keys),
                    resolved=mask(cp.resolved, keys), history=mask(cp.history, keys),
                    engine=replace(cp.engine, tasks=mask(cp.engine.tasks, keys)))
            for cp in checkpoints]


def _place(cp: RuntimeCheckpoint) -> int:
    assert cp.position is not None  # the Django store numbers what it lists
    return cp.position


def _ended(cp: RuntimeCheckpoint, previous: RuntimeCheckpoint | None) -> list[dict[str, Any]]:
    """The interrupts that ended at ``cp`` (resolved only grows within one run)."""
    done = len(previous.resolved) if previous else 0
    return cp.resolved[done:] if len(cp.resolved) >= done else cp.resolved


def _entry(seq: int, cp: RuntimeCheckpoint, previous: RuntimeCheckpoint | None,
           ended: list[dict[str, Any]], answers: dict[str, Answer], run_input: Any,
           counted: dict[str, list[Approval]],
           states: tuple[dict[str, Any], dict[str, Any]]) -> Entry:
    seen = {i["id"] for i in previous.interrupts} if previous else set()
    raised = [{**i, "summary": record_summary(i, run_input)}
              for i in cp.interrupts if i["id"] not in seen]
    starts = previous is None or cp.run_id != previous.run_id
    return Entry(
        seq=seq, checkpoint_id=cp.id, run_id=cp.run_id,
        node=", ".join(_what_happened(cp, previous, ended, raised)),
        status=fork_start.shown_status(cp), error=fork_start.shown_error(cp),
        next_step=fork_start.next_step(cp),
        created_at=from_ms(cp.created_at, timezone.now()).isoformat(), raised=raised,
        resolved=[_resolution(r, answers.get(r["id"]), run_input, counted.get(r["id"], []))
                  for r in ended],
        diff=state_diff(*states),
        forked_from=cp.forked_from if previous is None else None, state=states[1],
        input=(cp.engine.tasks[0].get("input")
               if starts and cp.step == 0 and cp.engine.tasks else None),
        namespace=list(cp.namespace), thread_id=cp.thread_id,
    )


def _what_happened(cp: RuntimeCheckpoint, previous: RuntimeCheckpoint | None,
                   ended: list[dict[str, Any]], raised: list[dict[str, Any]]) -> list[str]:
    """The nodes this checkpoint is about: those that completed in its step, else those
    answered, else those that paused, else the sub-agents the run waits on."""
    done = len(previous.history) if previous else 0
    added = cp.history[done:] if len(cp.history) >= done else cp.history
    for names in ([h["node"] for h in added], [r["node"] for r in ended],
                  [i["node"] for i in raised],
                  [t["node"] for t in cp.engine.tasks if t.get("status") == "interrupted"]):
        if names:
            return list(dict.fromkeys(names))
    return [cp.node] if cp.node else []


def _resolution(record: dict[str, Any], answer: Answer | None, run_input: Any,
                counted: list[Approval]) -> Resolution:
    steering = answer.steering if answer else ""
    return Resolution(
        interrupt_id=record["id"], node=record.get("node", ""),
        status=record.get("status", ""), answer=record.get("answer"),
        answered_by=answer.user.get_username() if answer and answer.user else None,
        answered_at=answer.created_at.isoformat() if answer else None,
        steering=steering, summary=record_summary(record, run_input),
        answer_text=answer_words(record.get("answer"), record.get("payload"),
                                 str(record.get("kind") or "node"), steering),
        approvals=[vote.entry() for vote in counted],
    )


def _answers(interrupt_ids: set[str]) -> dict[str, Answer]:
    """The accepted answer of each interrupt (the first one; later ones were refused)."""
    found: dict[str, Answer] = {}
    rows = Answer.objects.filter(interrupt_id__in=interrupt_ids).select_related("user")
    for answer in rows.order_by("created_at"):
        found.setdefault(answer.interrupt_id, answer)
    return found


def _place_notes(result: list[Entry], checkpoints: list[RuntimeCheckpoint],
                 after: int | None, until: int | None) -> None:
    """Standalone notes go to the first checkpoint saved after them (else the last); a
    page takes the notes made after the checkpoint before it and up to its own last."""
    if not result:
        return
    run_ids = {entry.run_id for entry in result}
    notes = (SteeringNote.objects.filter(run_id__in=run_ids, answer__isnull=True)
             .select_related("user").order_by("created_at"))
    for note in notes:
        at = note.created_at.timestamp() * 1000
        if (after is not None and at <= after) or (until is not None and at > until):
            continue
        index = next((i for i, cp in enumerate(checkpoints) if cp.created_at >= at),
                     len(checkpoints) - 1)
        result[index].notes.append(Note(
            text=note.text, by=note.user.get_username() if note.user else None,
            at=note.created_at.isoformat(), interrupt_id=note.interrupt_id,
        ))
