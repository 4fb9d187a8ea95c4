"""Checkpoints kept as step records (``runtime.store_kit``) instead of whole copies.

Each thread's checkpoints are converted oldest first: a checkpoint that only added to its
parent's history keeps just what it added, and its head becomes a patch against its
parent's; the thread row keeps the latest head whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import migrations, models

# A frozen copy of the converter this migration ran with: the runtime no longer carries
# it, and a migration must not change when the runtime does. It writes the simplest
# forms of the step-record format (``runtime._records``), which the runtime reads.

# A head's fields, as ``Checkpoint.to_dict`` writes them; the rest (history, state,
# resolved) only grow and go into the records.
HEAD_NAMES = (
    "id", "thread_id", "node", "interrupt_payload", "pending_input", "created_at", "run_id",
    "parent_id", "namespace", "status", "step", "graph", "root_thread_id", "parent_run_id",
    "parent_thread_id", "sub_agent_id", "tasks", "interrupts", "answers", "cancels",
    "steering", "once", "output", "error", "forked_from", "children", "lease", "metadata",
)


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON (``True`` is not ``1``)."""
    return old is new or _text(old) == _text(new)


def _diff(old: Any, new: Any) -> dict[str, Any] | None:
    """A patch turning ``old`` into ``new`` (None: the same): a dict's changed keys, a
    list's appended items, else the whole value."""
    if _same(old, new):
        return None
    if type(old) is dict and type(new) is dict:
        changed = {key: {"v": value} if key not in old else _diff(old[key], value)
                   for key, value in new.items()}
        patch: dict[str, Any] = {"d": {k: p for k, p in changed.items() if p is not None}}
        removed = [key for key in old if key not in new]
        if removed:
            patch["x"] = removed
        return patch
    if type(old) is list and type(new) is list and len(new) > len(old) \
            and _same(old, new[:len(old)]):
        return {"a": new[len(old):]}
    return {"v": new}


def _head(doc: dict[str, Any]) -> dict[str, Any]:
    """The head as the store keeps it, with the task that completed last (``_last``)."""
    head = {name: doc[name] for name in HEAD_NAMES if name in doc}
    history, tasks = doc.get("history") or [], doc.get("tasks") or []
    head["_last"] = None
    if history:
        last = history[-1]
        done = next((t["id"] for t in reversed(tasks) if t["node"] == last["node"]), None)
        head["_last"] = {"node": last["node"], "task_id": done,
                         "cancelled": bool(last.get("cancelled"))}
    return head


def _added(prev: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any] | None:
    """What ``doc`` added to ``prev``'s history and ended interrupts, if it only added."""
    if doc.get("parent_id") != prev["id"]:
        return None
    old_h, new_h = prev.get("history") or [], doc.get("history") or []
    old_r, new_r = prev.get("resolved") or [], doc.get("resolved") or []
    if not (_same(old_h, new_h[:len(old_h)]) and _same(old_r, new_r[:len(old_r)])):
        return None
    state = dict(prev.get("state") or {})
    for entry in new_h[len(old_h):]:
        if not entry.get("cancelled"):
            state[entry["node"]] = entry["output"]
    if not _same(state, doc.get("state") or {}):
        return None
    return {"h": new_h[len(old_h):], "r": new_r[len(old_r):]}


def from_full_copies(docs: Iterable[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """Each whole checkpoint of one thread, oldest first, as its step record and head
    (JSON): what it added to its parent where it only added, else all it holds."""
    prev: tuple[dict[str, Any], dict[str, Any]] | None = None
    for doc in docs:
        head = _head(doc)
        added = _added(prev[0], doc) if prev is not None else None
        growing = doc.get("history") or doc.get("state") or doc.get("resolved")
        if added is not None:
            assert prev is not None
            record = {"head": _diff(prev[1], head), "add": added}
        elif not growing:
            record = {"head": {"v": head}, "add": {"h": [], "r": [], "reset": True}}
        else:
            record = {"head": {"v": head}, "full": {
                "history": doc.get("history") or [], "state": doc.get("state") or {},
                "resolved": doc.get("resolved") or []}}
        yield _text(record), _text(head)
        prev = doc, head


def to_records(apps: Any, schema_editor: Any) -> None:
    alias = schema_editor.connection.alias
    thread_model = apps.get_model("forgeui", "Thread")
    checkpoint_model = apps.get_model("forgeui", "Checkpoint")
    for thread in thread_model.objects.using(alias).iterator():
        rows = list(checkpoint_model.objects.using(alias).filter(thread_id=thread.pk)
                    .order_by("seq").values_list("id", "data"))
        head = ""
        for (checkpoint_id, _), (record, head) in zip(
                rows, from_full_copies(d for _, d in rows), strict=True):
            checkpoint_model.objects.using(alias).filter(pk=checkpoint_id).update(
                record=record, base_id="")
        thread_model.objects.using(alias).filter(pk=thread.pk).update(head=head)


class Migration(migrations.Migration):

    dependencies = [
        ('forgeui', '0012_checkpoints_found_by_run_through_the_run_row'),
    ]

    operations = [
        migrations.AddField(
            model_name='thread',
            name='head',
            field=models.TextField(blank=True, default='', help_text="JSON; empty until the thread's first own save (a fork's first checkpoint is rebuilt instead)"),
        ),
        migrations.AddField(
            model_name='thread',
            name='deleted',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='checkpoint',
            name='base_id',
            field=models.CharField(blank=True, db_index=True, default='', max_length=255),
        ),
        migrations.AddField(
            model_name='checkpoint',
            name='record',
            field=models.TextField(default='', help_text='JSON step record (runtime._records)'),
            preserve_default=False,
        ),
        migrations.RunPython(to_records, migrations.RunPython.noop, elidable=True),
        migrations.RemoveField(
            model_name='checkpoint',
            name='data',
        ),
    ]
