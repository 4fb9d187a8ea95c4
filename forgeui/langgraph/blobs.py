"""How ``ForgeSaver`` keeps a channel's value: whole, or as the items a step appended.

A step of a chat appends a message or two to a list that may hold thousands. When the saver
knows a version of that list whose items the new one starts with, it stores only the
appended items and the version they extend. Every ``SEGMENT`` parts, the part holds the
items appended since the part ``SEGMENT`` back instead, and every ``APPEND_CHAIN`` parts the
list is stored whole again; so reading any version back is one query for at most
``APPEND_CHAIN // SEGMENT + SEGMENT`` rows on its way to the whole copy.

Which version of a channel it knows: the one it last wrote, or read if not older; one per
channel, so reading a thread's history does not keep every version in memory. It keeps the
items (shared with the value the graph holds) and the stored parts they were written as.
A node may change an old item in place, so the items are held against those parts before
they count: serialised again, the known prefix of a new value must be the very bytes
stored, else the value is stored whole; a known version is served without a read only
while its items still are what the database holds. Serialising costs a fraction of
reading the list back, and no process serves what another could not read.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import transaction
from langgraph.checkpoint.base import SerializerProtocol

from . import statements

APPEND_CHAIN = 256
SEGMENT = 16
KNOWN = 1024
# Versions ForgeSaver makes (see ``ForgeSaver.get_next_version``): their random part means
# a version names one value, even across a thread deleted and saved again elsewhere. Values
# under other versions (say, plain integers) are always read from the database.
OWN_VERSION = re.compile(r"\d{10}\.[0-9a-f]{8}")

Space = tuple[str, str]            # (thread_id, checkpoint_ns)
Key = tuple[str, str]              # (channel, version)
# One stored slice of a list: the index it ends at, and its serialised (type, blob).
Part = tuple[int, str, bytes]


class BrokenAppendChain(Exception):
    """A stored list's appended items lead back to a version that is not stored."""


@dataclass(frozen=True)
class Known:
    version: str
    items: tuple[Any, ...]
    # The slices the database holds the items in, first to last (the whole copy, then
    # the parts a read of this version goes through).
    parts: tuple[Part, ...]
    depth: int
    root: str
    # The nearest version at a depth ``SEGMENT`` divides (itself, or the whole copy), and
    # how many items it holds: what the part at the next such depth extends.
    anchor: str
    anchor_len: int


class BlobCodec:
    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde
        self._known: OrderedDict[tuple[str, str, str], Known] = OrderedDict()
        self._lock = threading.Lock()

    # -- the known versions -----------------------------------------------------------

    def _get(self, key: tuple[str, str, str], version: str | None = None) -> Known | None:
        """The value known of ``version`` of a channel, or of its known version."""
        with self._lock:
            known = self._known.get(key)
            if known is None or (version is not None and known.version != version):
                return None
            self._known.move_to_end(key)
            return known

    def remember(self, entries: Iterable[tuple[tuple[str, str, str], Known]],
                 newer_only: bool = False) -> None:
        with self._lock:
            for key, known in entries:
                held = self._known.get(key)
                if newer_only and held is not None and held.version > known.version:
                    continue
                self._known[key] = known
                self._known.move_to_end(key)
            while len(self._known) > KNOWN:
                self._known.popitem(last=False)

    def forget(self, thread_ids: Iterable[str]) -> None:
        gone = set(thread_ids)
        with self._lock:
            for key in [k for k in self._known if k[0] in gone]:
                del self._known[key]

    # -- writing ----------------------------------------------------------------------

    def dump(self, thread_id: str, ns: str, values: Mapping[str, tuple[Any, str]]
             ) -> tuple[list[tuple[Any, ...]], list[tuple[tuple[str, str, str], Known]]]:
        """Rows (``statements.BlobRow`` fields) for ``{channel: (value, version)}``, and
        what to remember once they are committed."""
        rows, learnt = [], []
        for channel, (value, version) in values.items():
            key = (thread_id, ns, channel)
            is_list = type(value) is list and OWN_VERSION.fullmatch(version) is not None
            known = self._get(key) if is_list else None
            if (known is not None and known.items and known.version != version
                    and known.depth + 1 < APPEND_CHAIN and self._holds(known.parts, value)):
                row, extended = self._appended(thread_id, ns, channel, version, value, known)
                rows.append(row)
                learnt.append((key, extended))
                continue
            type_, blob = self.serde.dumps_typed(value)
            rows.append((thread_id, ns, channel, version, type_, blob, "", "", 0))
            if is_list:
                learnt.append((key, Known(version, tuple(value), ((len(value), type_, blob),),
                                          0, version, version, len(value))))
        return rows, learnt

    def _appended(self, thread_id: str, ns: str, channel: str, version: str,
                  value: list[Any], known: Known) -> tuple[tuple[Any, ...], Known]:
        """The row of ``value`` as the items appended to ``known`` (or, at a segment's
        end, to its anchor), and what is then known."""
        depth = known.depth + 1
        if depth % SEGMENT:
            base, start, anchor = known.version, len(known.items), known.anchor
            anchor_len = known.anchor_len
        else:
            base, start, anchor = known.anchor, known.anchor_len, version
            anchor_len = len(value)
        type_, blob = self.serde.dumps_typed(value[start:])
        parts = (*(p for p in known.parts if p[0] <= start), (len(value), type_, blob))
        return ((thread_id, ns, channel, version, type_, blob, base, known.root, depth),
                Known(version, tuple(value), parts, depth, known.root, anchor, anchor_len))

    def _holds(self, parts: Iterable[Part], value: list[Any] | tuple[Any, ...]) -> bool:
        """Does ``value`` start with the items ``parts`` hold, each as it was stored?"""
        start = 0
        for stop, type_, blob in parts:
            if stop > len(value) or self.serde.dumps_typed(value[start:stop]) != (type_, blob):
                return False
            start = stop
        return True

    # -- reading ----------------------------------------------------------------------

    def load(self, using: str, wanted: Mapping[Space, Iterable[Key]]
             ) -> dict[Space, dict[Key, Any]]:
        """The values stored under these versions (a missing one is left out): one query
        for the rows of all of them and the parts they lead back through."""
        found, query = self._in_memory(wanted)
        if not query:
            return found
        rows = {(r.thread_id, r.checkpoint_ns, r.channel, r.version): r
                for r in statements.blobs(using, query)}
        learnt: dict[tuple[str, str, str], Known] = {}
        for space, keys in wanted.items():
            for channel, version in keys:
                row = rows.get((*space, channel, version))
                if row is None or (channel, version) in found.get(space, {}):
                    continue
                if row.type == "empty":
                    continue
                value, parts, anchor, anchor_len = self._value(rows, row)
                found.setdefault(space, {})[(channel, version)] = value
                key = (*space, channel)
                if (type(value) is list and OWN_VERSION.fullmatch(version)
                        and (key not in learnt or learnt[key].version < version)):
                    learnt[key] = Known(version, tuple(value), parts, row.depth,
                                        row.root_version or version, anchor, anchor_len)
        # Read inside a transaction, a version is known only once that commits.
        transaction.on_commit(partial(self.remember, learnt.items(), newer_only=True),
                              using=using)
        return found

    def _in_memory(self, wanted: Mapping[Space, Iterable[Key]]
                   ) -> tuple[dict[Space, dict[Key, Any]], list[tuple[str, list[Any]]]]:
        """The wanted values known here (and still as stored), and the conditions for
        ``statements.blobs`` that read the others."""
        found: dict[Space, dict[Key, Any]] = {}
        query: list[tuple[str, list[Any]]] = []
        for (thread_id, ns), keys in wanted.items():
            missing = []
            for channel, version in keys:
                known = self._get((thread_id, ns, channel), version)
                if known is not None and self._holds(known.parts, list(known.items)):
                    found.setdefault((thread_id, ns), {})[(channel, version)] = list(
                        known.items)
                else:
                    missing.append((channel, version))
            if missing:
                query.append(statements.chained_blobs(
                    thread_id, ns, sorted({c for c, _ in missing}),
                    sorted({v for _, v in missing}), SEGMENT))
        return found, query

    def _value(self, rows: Mapping[tuple[str, str, str, str], Any], row: Any
               ) -> tuple[Any, tuple[Part, ...], str, int]:
        """The value of ``row``, the parts it was read from, and its anchor (see
        ``Known``) with the anchor's length."""
        chain = []
        anchor_at = -1
        while row.base_version:
            if anchor_at < 0 and row.depth % SEGMENT == 0:
                anchor_at = len(chain)
            chain.append(row)
            base = rows.get((row.thread_id, row.checkpoint_ns, row.channel, row.base_version))
            if base is None:
                raise BrokenAppendChain(
                    f"{row.thread_id}/{row.checkpoint_ns}/{row.channel}@{row.version}: the "
                    f"version it extends, {row.base_version}, is not stored")
            row = base
        value = self.serde.loads_typed((row.type, row.blob or b""))
        if type(value) is not list:
            return value, (), row.version, 0
        items = list(value)
        parts: list[Part] = [(len(items), row.type, row.blob or b"")]
        anchor, anchor_len = row.version, len(items)
        for i in range(len(chain) - 1, -1, -1):
            items.extend(self.serde.loads_typed((chain[i].type, chain[i].blob or b"")))
            parts.append((len(items), chain[i].type, chain[i].blob or b""))
            if i == anchor_at:
                anchor, anchor_len = chain[i].version, len(items)
        return items, tuple(parts), anchor, anchor_len

    # -- collecting -------------------------------------------------------------------

    @staticmethod
    def needed(referenced: set[Key], rows: Iterable[tuple[int, str, str, str]]) -> set[int]:
        """Of ``(pk, channel, version, base_version)`` rows, the pks that the
        ``referenced`` versions are read from."""
        by_key = {(channel, version): (pk, base) for pk, channel, version, base in rows}
        keep: set[int] = set()
        todo = [k for k in referenced if k in by_key]
        while todo:
            channel, version = todo.pop()
            pk, base = by_key[(channel, version)]
            if pk in keep:
                continue
            keep.add(pk)
            if base and (channel, base) in by_key:
                todo.append((channel, base))
        return keep
