"""``ForgeSaver``'s deleting, pruning and copying of threads.

A blob may be read by many checkpoints of its namespace, and an appended part by every
later version of its list, so deleting checkpoints deletes only the blobs that no
remaining checkpoint reads (``BlobCodec.needed``).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from ..models import LangGraphBlob, LangGraphCheckpoint, LangGraphWrite
from .blobs import BlobCodec

PRUNE_STRATEGIES = ("keep_latest", "delete")
Key = tuple[str, str, str]  # (thread_id, checkpoint_ns, checkpoint_id)


def delete_threads(using: str, codec: BlobCodec, thread_ids: Sequence[str]) -> None:
    """Forget every checkpoint, blob and write of these threads."""
    codec.forget(thread_ids)
    with transaction.atomic(using=using):
        for model in (LangGraphCheckpoint, LangGraphBlob, LangGraphWrite):
            model.objects.using(using).filter(thread_id__in=thread_ids).delete()


def delete_for_runs(using: str, codec: BlobCodec, run_ids: Sequence[str]) -> None:
    """Forget the checkpoints saved by these runs, their writes and the blobs no other
    checkpoint still needs."""
    if not run_ids:
        return
    with transaction.atomic(using=using):
        doomed = LangGraphCheckpoint.objects.using(using).filter(run_id__in=run_ids)
        keys = list(doomed.values_list("thread_id", "checkpoint_ns", "checkpoint_id"))
        if keys:
            delete_checkpoints(using, codec, keys)


def delete_checkpoints(using: str, codec: BlobCodec, keys: Sequence[Key]) -> None:
    """Delete these checkpoints and their writes, then the blobs of their namespaces
    that no remaining checkpoint reads."""
    spaces = {(t, ns) for t, ns, _ in keys}
    codec.forget({t for t, _ in spaces})
    for thread_id, ns in spaces:
        ids = [c for t, n, c in keys if (t, n) == (thread_id, ns)]
        for model in (LangGraphWrite, LangGraphCheckpoint):
            model.objects.using(using).filter(
                thread_id=thread_id, checkpoint_ns=ns, checkpoint_id__in=ids).delete()
        LangGraphCheckpoint.objects.using(using).filter(
            thread_id=thread_id, checkpoint_ns=ns, parent_checkpoint_id__in=ids,
        ).update(parent_checkpoint_id="")
        collect_blobs(using, codec, thread_id, ns)


def collect_blobs(using: str, codec: BlobCodec, thread_id: str, ns: str) -> None:
    """Delete the namespace's blobs that no checkpoint of it reads."""
    referenced: set[tuple[str, str]] = set()
    for type_, payload in LangGraphCheckpoint.objects.using(using).filter(
            thread_id=thread_id, checkpoint_ns=ns).values_list("type", "checkpoint"):
        checkpoint = codec.serde.loads_typed((type_, bytes(payload)))
        referenced.update((ch, str(v)) for ch, v in checkpoint["channel_versions"].items()
                          if ch not in checkpoint["channel_values"])
    blobs = LangGraphBlob.objects.using(using).filter(thread_id=thread_id, checkpoint_ns=ns)
    rows = list(blobs.values_list("pk", "channel", "version", "base_version"))
    needed = codec.needed(referenced, rows)
    garbage = [row[0] for row in rows if row[0] not in needed]
    for start in range(0, len(garbage), 500):
        LangGraphBlob.objects.using(using).filter(pk__in=garbage[start:start + 500]).delete()


def copy_thread(using: str, source: str, target: str) -> None:
    """Copy every checkpoint, blob and write of one thread to another."""
    with transaction.atomic(using=using):
        for model in (LangGraphBlob, LangGraphWrite, LangGraphCheckpoint):
            manager = model.objects.using(using)
            copies = []
            for row in manager.filter(thread_id=source).iterator(chunk_size=500):
                row.pk = None
                row.thread_id = target
                copies.append(row)
            manager.bulk_create(copies, batch_size=500, ignore_conflicts=True)


def prune(using: str, codec: BlobCodec, thread_ids: Sequence[str], strategy: str) -> None:
    """See ``ForgeSaver.prune``."""
    if strategy not in PRUNE_STRATEGIES:
        raise ValueError(f"Unknown prune strategy: {strategy!r}")
    if not thread_ids:
        return
    if strategy == "delete":
        delete_threads(using, codec, thread_ids)
        return
    with transaction.atomic(using=using):
        rows = LangGraphCheckpoint.objects.using(using).filter(
            thread_id__in=thread_ids).order_by("-checkpoint_id")
        # A DeltaChannel's value is rebuilt from the writes of older checkpoints.
        if delta := sorted(set(rows.filter(
                metadata__has_key="counters_since_delta_snapshot").values_list(
                "thread_id", flat=True))):
            raise NotImplementedError(
                f"keep_latest can't prune threads that use a DeltaChannel: "
                f"{', '.join(delta)}")
        latest: set[tuple[str, str]] = set()
        doomed = []
        for key in rows.values_list("thread_id", "checkpoint_ns", "checkpoint_id"):
            if (key[0], key[1]) in latest:
                doomed.append(key)
            else:
                latest.add((key[0], key[1]))
        if doomed:
            delete_checkpoints(using, codec, doomed)
