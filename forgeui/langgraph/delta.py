"""``DeltaChannel`` history for ``ForgeSaver``: the writes since each channel's last stored
value, found without reading whole checkpoints.

From the target checkpoint back along its parents, a page of checkpoint rows at a time
(an ancestor's id is smaller than its child's), each channel's walk stops at the first
ancestor holding a value for it: inline in the checkpoint, or a blob for its version. Then
one query reads those ancestors' writes to the channels, and the seeds are read as any
value is. The cost follows the channels' snapshot interval, not the thread's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite, writes_sort_key

from ..models import LangGraphBlob, LangGraphCheckpoint, LangGraphWrite
from .blobs import BlobCodec

PAGE = 256


@dataclass
class _Walk:
    """The walk back from ``target_id``: each channel's ancestors passed (newest first),
    where its walk stands (None: ended), and the seed it ended at, inline or a version."""

    target_id: str
    chain: dict[str, list[str]]
    parent_of: dict[str, str] = field(default_factory=dict)
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)  # cid -> versions
    inline: dict[str, dict[str, Any]] = field(default_factory=dict)
    cursor: dict[str, str | None] = field(default_factory=dict)
    seed_inline: dict[str, Any] = field(default_factory=dict)
    seed_version: dict[str, str] = field(default_factory=dict)

    def read(self, codec: BlobCodec, page: list[tuple[Any, ...]]) -> set[tuple[str, str]]:
        """Take in a page of checkpoint rows; the channel versions they name."""
        wanted: set[tuple[str, str]] = set()
        for cid, parent, type_, payload in page:
            checkpoint = codec.serde.loads_typed((type_, bytes(payload)))
            self.parent_of[cid] = parent
            self.versions[cid] = checkpoint["channel_versions"]
            self.inline[cid] = checkpoint["channel_values"]
            wanted.update((ch, str(v)) for ch, v in checkpoint["channel_versions"].items()
                          if ch in self.chain)
        return wanted

    def advance(self, ch: str, stored: set[tuple[str, str]]) -> None:
        """Walk ``ch`` back through the rows read, to its seed or the page's end."""
        if ch in self.seed_inline or ch in self.seed_version:
            return
        if ch not in self.cursor:
            if self.target_id not in self.parent_of:
                return
            self.cursor[ch] = self.parent_of[self.target_id] or None
        cid = self.cursor[ch]
        while cid is not None and cid in self.parent_of:
            self.chain[ch].append(cid)
            version = self.versions[cid].get(ch)
            if ch in self.inline[cid]:
                self.seed_inline[ch], cid = self.inline[cid][ch], None
            elif version is not None and (ch, str(version)) in stored:
                self.seed_version[ch], cid = str(version), None
            else:
                cid = self.parent_of[cid] or None
        self.cursor[ch] = cid

    def done(self) -> bool:
        return all(ch in self.seed_inline or ch in self.seed_version
                   or self.cursor.get(ch, "") is None for ch in self.chain)


def history(using: str, codec: BlobCodec, thread_id: str, ns: str, target_id: str,
            channels: list[str]) -> dict[str, DeltaChannelHistory]:
    walk = _Walk(target_id, {ch: [] for ch in channels})
    rows = LangGraphCheckpoint.objects.using(using).filter(thread_id=thread_id,
                                                           checkpoint_ns=ns)
    below, first = target_id, True
    while True:
        page = list(rows.filter(**{"checkpoint_id__lte" if first else "checkpoint_id__lt":
                                   below}).order_by("-checkpoint_id").values_list(
            "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint")[:PAGE])
        first = False
        if not page:
            break
        wanted = walk.read(codec, page)
        stored = set(LangGraphBlob.objects.using(using).filter(
            thread_id=thread_id, checkpoint_ns=ns, channel__in=channels,
            version__in={v for _, v in wanted}).exclude(type="empty").values_list(
            "channel", "version")) if wanted else set()
        for ch in channels:
            walk.advance(ch, stored)
        if walk.done() or len(page) < PAGE:
            break
        below = page[-1][0]
    return _assemble(using, codec, thread_id, ns, channels, walk.chain, walk.seed_inline,
                     walk.seed_version)


def _assemble(using: str, codec: BlobCodec, thread_id: str, ns: str, channels: list[str],
              chain: dict[str, list[str]], seed_inline: dict[str, Any],
              seed_version: dict[str, str]) -> dict[str, DeltaChannelHistory]:
    cids = {cid for ids in chain.values() for cid in ids}
    writes: dict[tuple[str, str], list[tuple[str, str, int, str, bytes]]] = {}
    if cids:
        for cid, ch, task_id, path, idx, type_, blob in LangGraphWrite.objects.using(
                using).filter(thread_id=thread_id, checkpoint_ns=ns,
                                    channel__in=channels, checkpoint_id__in=cids).values_list(
                "checkpoint_id", "channel", "task_id", "task_path", "idx", "type", "blob"):
            writes.setdefault((cid, ch), []).append((task_id, path, idx, type_, bytes(blob)))
    seeds = codec.load(using, {(thread_id, ns): set(seed_version.items())}).get(
        (thread_id, ns), {}) if seed_version else {}
    result: dict[str, DeltaChannelHistory] = {}
    for ch in channels:
        collected: list[PendingWrite] = []
        for cid in reversed(chain[ch]):
            for task_id, _, _, type_, blob in sorted(
                    writes.get((cid, ch), []), key=lambda w: writes_sort_key(w[1], w[0], w[2])):
                collected.append((task_id, ch, codec.serde.loads_typed((type_, blob))))
        entry: DeltaChannelHistory = {"writes": collected}
        if ch in seed_inline:
            entry["seed"] = seed_inline[ch]
        elif ch in seed_version and (ch, seed_version[ch]) in seeds:
            entry["seed"] = seeds[(ch, seed_version[ch])]
        result[ch] = entry
    return result
