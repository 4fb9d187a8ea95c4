"""``ForgeSaver``: LangGraph's ``BaseCheckpointSaver`` on the Django ORM.

Laid out as LangGraph's ``PostgresSaver`` is: a checkpoint row with its small values inline,
one blob row per (thread, namespace, channel, version) written only for the channels a step
changed, and the tasks' pending writes. A ``put`` is one transaction of at most two
statements; ``get_tuple`` reads the checkpoint, the blobs its versions name and its writes,
whatever the length of the thread. Async methods run the sync ones on the loop's pool,
each on that thread's connection: on the one thread Django's async ORM calls share, a
graph awaited inside a worker's loop would queue every run's saves behind each other (or
wait forever on a thread that is itself waiting for the graph).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
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

from ..models import LangGraphCheckpoint
from . import forgetting, statements
from .blobs import BlobCodec
from .closing import close_at_thread_exit, off_loop
from .delta import history

# A checkpoint row as read: a named tuple (model instances cost more than the query).
ROW = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "type",
       "checkpoint", "metadata")
# Checkpoints read per batch by ``list``: their blobs and writes come in one query each.
LIST_BATCH = 100


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
        close_at_thread_exit(self.using)
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
        close_at_thread_exit(self.using)
        rows, in_python = self._filtered(config, filter or {}, before)
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

    def _filtered(self, config: RunnableConfig | None, filter: dict[str, Any],
                  before: RunnableConfig | None) -> tuple[Any, dict[str, Any]]:
        """``list``'s rows, filtered in SQL where it can; the metadata filters left to
        apply in Python (values that are not plain, keys that are not names)."""
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
        for key, value in filter.items():
            if _is_inline(value) and key.isidentifier() and "__" not in key:
                rows = rows.filter(Q(**{f"metadata__{key}": value}))
            else:
                in_python[key] = value
        return rows, in_python

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
        close_at_thread_exit(self.using)
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
        close_at_thread_exit(self.using)
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
        close_at_thread_exit(self.using)
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

    # -- deleting and copying (``forgetting``) --------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Forget every checkpoint, blob and write of the thread."""
        close_at_thread_exit(self.using)
        forgetting.delete_threads(self.using, self.codec, [str(thread_id)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Forget the checkpoints saved by these runs, their writes and the blobs no other
        checkpoint still needs."""
        close_at_thread_exit(self.using)
        forgetting.delete_for_runs(self.using, self.codec, [str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, blob and write of one thread to another."""
        close_at_thread_exit(self.using)
        forgetting.copy_thread(self.using, str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"delete"``: forget the threads. ``"keep_latest"``: keep each namespace's latest
        checkpoint, its writes and the blobs it reads; forget the rest. As LangGraph's
        ``PostgresSaver``, ``keep_latest`` refuses (``NotImplementedError``, nothing
        pruned) threads that use a ``DeltaChannel``."""
        close_at_thread_exit(self.using)
        forgetting.prune(self.using, self.codec, _thread_ids(thread_ids), strategy)

    # -- async twins ------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await off_loop(self.get_tuple, config, using=self.using)

    async def aget_delta_channel_history(
            self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await off_loop(self.get_delta_channel_history, using=self.using,
                              config=config, channels=channels)

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None, before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        def page() -> list[CheckpointTuple]:
            return [*self.list(config, filter=filter, before=before, limit=limit)]

        for item in await off_loop(page, using=self.using):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions
                   ) -> RunnableConfig:
        return await off_loop(self.put, config, checkpoint, metadata, new_versions,
                              using=self.using)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        await off_loop(self.put_writes, config, writes, task_id, task_path, using=self.using)

    async def adelete_thread(self, thread_id: str) -> None:
        await off_loop(self.delete_thread, thread_id, using=self.using)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await off_loop(self.delete_for_runs, run_ids, using=self.using)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await off_loop(self.copy_thread, source_thread_id, target_thread_id, using=self.using)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await off_loop(self.prune, thread_ids, using=self.using, strategy=strategy)


_MISSING = object()
