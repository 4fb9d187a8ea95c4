"""``ForgeSaver``: LangGraph's ``BaseCheckpointSaver`` on the Django ORM.

Laid out as LangGraph's ``PostgresSaver`` is: a checkpoint row with its small values inline,
one blob row per (thread, namespace, channel, version) written only for the channels a step
changed, and the tasks' pending writes. A ``put`` is one transaction of at most two
statements; ``get_tuple`` reads the checkpoint, the blobs its versions name and its writes,
whatever the length of the thread. Async methods run the sync ones on Django's
thread-sensitive executor, as Django's own async ORM methods do.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    SerializerProtocol,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)

from ..models import LangGraphBlob, LangGraphCheckpoint, LangGraphWrite
from . import statements
from .blobs import BlobCodec
from .delta import history

PRUNE_STRATEGIES = ("keep_latest", "delete")
# A checkpoint row as read: a named tuple (model instances cost more than the query).
ROW = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type",
       "checkpoint", "metadata")
# Checkpoints read per batch by ``list``: their blobs and writes come in one query each.
LIST_BATCH = 100


class _ClosesAtThreadExit:
    """Closes a thread's connection when the thread ends (its thread-locals go then).

    LangGraph saves from threads of its own that end with each ``invoke``; nothing else
    would close the connections Django opens in them."""

    def __init__(self, wrapper: BaseDatabaseWrapper) -> None:
        self.wrapper = wrapper

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.wrapper.close()


_THREAD = threading.local()


def _close_at_thread_exit(using: str) -> None:
    if threading.current_thread() is threading.main_thread():
        return
    guards = getattr(_THREAD, "guards", None)
    if guards is None:
        guards = _THREAD.guards = {}
    if using not in guards:
        guards[using] = _ClosesAtThreadExit(connections[using])


def _is_inline(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                             "checkpoint_id": checkpoint_id}}


def _thread_ids(thread_ids: Sequence[str]) -> list[str]:
    if isinstance(thread_ids, str):
        raise TypeError("thread_ids must be a sequence of thread IDs, not a str")
    return [str(t) for t in thread_ids]


class ForgeSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints in forge's database; ``using`` names the Django alias."""

    def __init__(self, using: str = DEFAULT_DB_ALIAS, *,
                 serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.using = using
        self.codec = BlobCodec(self.serde)

    def __repr__(self) -> str:
        return f"ForgeSaver(using={self.using!r})"

    # -- reading ----------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the latest of its thread and namespace."""
        _close_at_thread_exit(self.using)
        conf = config["configurable"]
        row, writes = statements.checkpoint(
            self.using, str(conf["thread_id"]), conf.get("checkpoint_ns", ""),
            get_checkpoint_id(config))
        if row is None:
            return None
        return self._tuples([row], writes)[0]

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread / namespace / metadata / ``before``."""
        _close_at_thread_exit(self.using)
        rows = LangGraphCheckpoint.objects.using(self.using).order_by("-checkpoint_id")
        if config is not None:
            conf = config["configurable"]
            rows = rows.filter(thread_id=str(conf["thread_id"]))
            if (ns := conf.get("checkpoint_ns")) is not None:
                rows = rows.filter(checkpoint_ns=ns)
            if checkpoint_id := get_checkpoint_id(config):
                rows = rows.filter(checkpoint_id=checkpoint_id)
        if before is not None and (before_id := get_checkpoint_id(before)):
            rows = rows.filter(checkpoint_id__lt=before_id)
        in_python: dict[str, Any] = {}
        for key, value in (filter or {}).items():
            if _is_inline(value) and key.isidentifier() and "__" not in key:
                rows = rows.filter(Q(**{f"metadata__{key}": value}))
            else:
                in_python[key] = value
        if limit is not None and limit >= 0 and not in_python:
            rows = rows[:limit]
        left = limit if limit is not None and limit >= 0 else None
        if left == 0:
            return
        batch: list[Any] = []
        for row in rows.values_list(*ROW, named=True).iterator(chunk_size=LIST_BATCH):
            if in_python and any(row.metadata.get(k, _MISSING) != v
                                 for k, v in in_python.items()):
                continue
            batch.append(row)
            if left is not None:
                left -= 1
            if len(batch) == LIST_BATCH or left == 0:
                yield from self._tuples(batch)
                batch = []
            if left == 0:
                return
        if batch:
            yield from self._tuples(batch)

    def _tuples(self, rows: Sequence[Any], writes: Sequence[tuple[Any, ...]] | None = None
                ) -> list[CheckpointTuple]:
        """Rows to tuples: one query for all their blobs, one for all their writes unless
        given (as ``statements.writes`` gives them)."""
        checkpoints = [self.serde.loads_typed((row.type, bytes(row.checkpoint)))
                       for row in rows]
        wanted: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for row, checkpoint in zip(rows, checkpoints, strict=True):
            inline = checkpoint["channel_values"]
            wanted.setdefault((row.thread_id, row.checkpoint_ns), set()).update(
                (channel, str(version))
                for channel, version in checkpoint["channel_versions"].items()
                if channel not in inline)
        values = self.codec.load(self.using, wanted)
        pending = self._writes(rows, writes)
        tuples = []
        for row, checkpoint in zip(rows, checkpoints, strict=True):
            found = values.get((row.thread_id, row.checkpoint_ns), {})
            channel_values = dict(checkpoint["channel_values"])
            for channel, version in checkpoint["channel_versions"].items():
                if channel not in channel_values and (channel, str(version)) in found:
                    channel_values[channel] = found[(channel, str(version))]
            checkpoint["channel_values"] = channel_values
            tuples.append(CheckpointTuple(
                config=_config(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
                checkpoint=checkpoint,
                metadata=row.metadata,
                parent_config=(_config(row.thread_id, row.checkpoint_ns,
                                       row.parent_checkpoint_id)
                               if row.parent_checkpoint_id else None),
                pending_writes=pending.get(
                    (row.thread_id, row.checkpoint_ns, row.checkpoint_id), []),
            ))
        return tuples

    def _writes(self, rows: Sequence[Any], read: Sequence[tuple[Any, ...]] | None
                ) -> dict[tuple[str, str, str], list[tuple[str, str, Any]]]:
        keys = {(r.thread_id, r.checkpoint_ns, r.checkpoint_id) for r in rows}
        found: dict[tuple[str, str, str], list[tuple[str, str, int, str, str, bytes]]] = {}
        for thread_id, ns in {k[:2] for k in keys}:
            ids = sorted(k[2] for k in keys if k[:2] == (thread_id, ns))
            for cid, *w in (read if read is not None
                            else statements.writes(self.using, thread_id, ns, ids)):
                found.setdefault((thread_id, ns, cid), []).append(
                    (w[0], w[1], w[2], w[3], w[4], bytes(w[5])))
        return {
            key: [(task_id, channel, self.serde.loads_typed((type_, blob)))
                  for task_id, _, _, channel, type_, blob in sorted(
                      ws, key=lambda w: writes_sort_key(w[1], w[0], w[2]))]
            for key, ws in found.items()
        }

    def get_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]
                                  ) -> Mapping[str, DeltaChannelHistory]:
        """``DeltaChannel``'s writes since each channel's nearest stored value, reading
        only the checkpoints on the way there (see ``delta.history``)."""
        _close_at_thread_exit(self.using)
        if not channels:
            return {}
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            target = self.get_tuple(config)
            if target is None:
                return {channel: {"writes": []} for channel in channels}
            checkpoint_id = target.config["configurable"]["checkpoint_id"]
        conf = config["configurable"]
        return history(self.using, self.codec, str(conf["thread_id"]),
                       conf.get("checkpoint_ns", ""), checkpoint_id, list(channels))

    # -- writing ----------------------------------------------------------------------

    def put(self, config: RunnableConfig, checkpoint: Checkpoint,
            metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        """Save ``checkpoint`` as the child of the one ``config`` names, with blobs for the
        channels in ``new_versions`` only."""
        _close_at_thread_exit(self.using)
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        checkpoint_ns = conf.get("checkpoint_ns", "")
        parent_id = conf.get("checkpoint_id") or ""
        stored = {**checkpoint, "channel_values": {}}
        large: dict[str, Any] = {}
        for channel, value in checkpoint["channel_values"].items():
            if _is_inline(value):
                stored["channel_values"][channel] = value
            else:
                large[channel] = value
        blobs, learnt = self.codec.dump(thread_id, checkpoint_ns, {
            channel: (large[channel], str(version))
            for channel, version in new_versions.items() if channel in large})
        type_, payload = self.serde.dumps_typed(stored)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        row = (thread_id, checkpoint_ns, checkpoint["id"], parent_id,
               str(meta.get("run_id") or ""), type_, payload, meta)
        with transaction.atomic(using=self.using, savepoint=False) if (
                blobs and connections[self.using].vendor != "postgresql"
        ) else contextlib.nullcontext():
            statements.save(self.using, row, blobs)
        if learnt:
            transaction.on_commit(partial(self.codec.remember, learnt), using=self.using)
        return _config(thread_id, checkpoint_ns, checkpoint["id"])

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        """Save a task's writes; a special channel's write replaces the one before."""
        _close_at_thread_exit(self.using)
        conf = config["configurable"]
        rows = []
        for idx, (channel, value) in enumerate(writes):
            type_, blob = self.serde.dumps_typed(value)
            rows.append((str(conf["thread_id"]), conf.get("checkpoint_ns", ""),
                         conf["checkpoint_id"], task_id, task_path,
                         WRITES_IDX_MAP.get(channel, idx), channel, type_, blob))
        if rows:
            statements.save_writes(self.using, rows,
                                   replace=all(ch in WRITES_IDX_MAP for ch, _ in writes))

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        """``"<n>.<random>"``, increasing as strings do; the random part keeps two branches
        of a thread from naming different values by one version."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:010d}.{random.getrandbits(32):08x}"

    # -- deleting and copying ---------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Forget every checkpoint, blob and write of the thread."""
        self._delete_threads([str(thread_id)])

    def _delete_threads(self, thread_ids: Sequence[str]) -> None:
        _close_at_thread_exit(self.using)
        self.codec.forget(thread_ids)
        with transaction.atomic(using=self.using):
            for model in (LangGraphCheckpoint, LangGraphBlob, LangGraphWrite):
                model.objects.using(self.using).filter(thread_id__in=thread_ids).delete()

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Forget the checkpoints saved by these runs, their writes and the blobs no other
        checkpoint still needs."""
        _close_at_thread_exit(self.using)
        run_ids = [str(r) for r in run_ids]
        if not run_ids:
            return
        with transaction.atomic(using=self.using):
            doomed = LangGraphCheckpoint.objects.using(self.using).filter(run_id__in=run_ids)
            keys = list(doomed.values_list("thread_id", "checkpoint_ns", "checkpoint_id"))
            if not keys:
                return
            self._delete_checkpoints(keys)

    def _delete_checkpoints(self, keys: Sequence[tuple[str, str, str]]) -> None:
        """Delete these checkpoints and their writes, then the blobs of their namespaces
        that no remaining checkpoint reads."""
        spaces = {(t, ns) for t, ns, _ in keys}
        self.codec.forget({t for t, _ in spaces})
        for thread_id, ns in spaces:
            ids = [c for t, n, c in keys if (t, n) == (thread_id, ns)]
            for model in (LangGraphWrite, LangGraphCheckpoint):
                model.objects.using(self.using).filter(
                    thread_id=thread_id, checkpoint_ns=ns, checkpoint_id__in=ids).delete()
            LangGraphCheckpoint.objects.using(self.using).filter(
                thread_id=thread_id, checkpoint_ns=ns, parent_checkpoint_id__in=ids,
            ).update(parent_checkpoint_id="")
            self._collect_blobs(thread_id, ns)

    def _collect_blobs(self, thread_id: str, ns: str) -> None:
        """Delete the namespace's blobs that no checkpoint of it reads."""
        referenced: set[tuple[str, str]] = set()
        for type_, payload in LangGraphCheckpoint.objects.using(self.using).filter(
                thread_id=thread_id, checkpoint_ns=ns).values_list("type", "checkpoint"):
            checkpoint = self.serde.loads_typed((type_, bytes(payload)))
            referenced.update((ch, str(v)) for ch, v in checkpoint["channel_versions"].items()
                              if ch not in checkpoint["channel_values"])
        blobs = LangGraphBlob.objects.using(self.using).filter(
            thread_id=thread_id, checkpoint_ns=ns)
        rows = list(blobs.values_list("pk", "channel", "version", "base_version"))
        needed = self.codec.needed(referenced, rows)
        garbage = [row[0] for row in rows if row[0] not in needed]
        for start in range(0, len(garbage), 500):
            LangGraphBlob.objects.using(self.using).filter(
                pk__in=garbage[start:start + 500]).delete()

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, blob and write of one thread to another."""
        _close_at_thread_exit(self.using)
        source, target = str(source_thread_id), str(target_thread_id)
        with transaction.atomic(using=self.using):
            for model in (LangGraphBlob, LangGraphWrite, LangGraphCheckpoint):
                manager = model.objects.using(self.using)
                copies = []
                for row in manager.filter(thread_id=source).iterator(chunk_size=500):
                    row.pk = None
                    row.thread_id = target
                    copies.append(row)
                manager.bulk_create(copies, batch_size=500, ignore_conflicts=True)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"delete"``: forget the threads. ``"keep_latest"``: keep each namespace's latest
        checkpoint, its writes and the blobs it reads; forget the rest. As LangGraph's
        ``PostgresSaver``, ``keep_latest`` refuses (``NotImplementedError``, nothing
        pruned) threads that use a ``DeltaChannel``."""
        _close_at_thread_exit(self.using)
        thread_ids = _thread_ids(thread_ids)
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        if not thread_ids:
            return
        if strategy == "delete":
            self._delete_threads(thread_ids)
            return
        with transaction.atomic(using=self.using):
            rows = LangGraphCheckpoint.objects.using(self.using).filter(
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
                self._delete_checkpoints(doomed)

    # -- async twins ------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await sync_to_async(self.get_tuple)(config)

    async def aget_delta_channel_history(
            self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await sync_to_async(self.get_delta_channel_history)(
            config=config, channels=channels)

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        def page() -> list[CheckpointTuple]:
            return [*self.list(config, filter=filter, before=before, limit=limit)]

        for item in await sync_to_async(page)():
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions
                   ) -> RunnableConfig:
        return await sync_to_async(self.put)(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        await sync_to_async(self.put_writes)(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await sync_to_async(self.delete_thread)(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await sync_to_async(self.delete_for_runs)(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await sync_to_async(self.copy_thread)(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await sync_to_async(self.prune)(thread_ids, strategy=strategy)


_MISSING = object()
