"""The audit log's hash chain: each entry's canonical form, its hash, and the walk that
checks a chain (from the database or from an exported file) and names the first break.

An entry's hash is ``SHA-256(previous entry's hash + canonical JSON of the entry)``, the
canonical JSON being the entry's ``seq``, ``timestamp``, ``actor``, ``sign_in`` (how the
actor signed in), ``action``, ``target`` and ``details`` with sorted keys, no whitespace,
UTF-8. The first entry follows ``GENESIS``. From chain version 2 on, the canonical JSON
also holds ``actor_id``, the account's id, so pointing an entry at another account breaks
it as renaming its actor does; entries written before keep the form they were hashed in.
Nothing here touches the database: the walk takes records (plain dicts, the lines of an
export) and a way to ask whether a hash belongs to an entry further along.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

GENESIS = "0" * 64
CANONICAL_FIELDS = ("seq", "timestamp", "actor", "sign_in", "action", "target", "details")
VERSION = 2  # the canonical form new entries are hashed in
TARGET_FIELDS = ("object_type", "object_id", "run_id", "thread_id", "before_checkpoint_id",
                 "after_checkpoint_id")

Kind = Literal["changed", "removed", "inserted", "reordered", "changed or inserted"]


@dataclass(frozen=True, slots=True)
class Break:
    """The first entry where the chain stops holding, and what most likely happened."""

    kind: Kind
    seq: int
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a walk found: how many entries held, the last one that did, the first break."""

    entries: int
    last_seq: int
    last_hash: str
    broken: Break | None = None

    @property
    def ok(self) -> bool:
        return self.broken is None


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def number(text: str) -> float | int:
    """A JSON number as any database gives it back: PostgreSQL writes a whole float too big
    for plain digits in Python (``1e+20``) as an integer, so the chain reads it as one."""
    value = float(text)
    if math.isfinite(value) and abs(value) >= WHOLE_FLOAT and value == int(value):
        return int(Decimal(text))
    return value


WHOLE_FLOAT = 1e16  # from here on, Python's repr of a float is in exponent form


# One encoder and one decoder for every entry: building them per call costs more than
# the hashing.
_DECODER = json.JSONDecoder(parse_float=number)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                            allow_nan=False)


def loads(text: str) -> Any:
    return _DECODER.decode(text)


def plain(value: Any) -> Any:
    """``value`` (an entry's details) as the chain reads it back from any database."""
    return loads(json.dumps(value, allow_nan=False))


def canonical(record: dict[str, Any]) -> bytes:
    """The hashed form; ``details`` must already be ``plain``."""
    body = {name: record[name] for name in CANONICAL_FIELDS}
    if record.get("version", 1) >= 2:
        body["actor_id"] = record.get("actor_id")
    return _ENCODER.encode(body).encode("utf-8", "surrogatepass")


def entry_hash(prev_hash: str, record: dict[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical(record)).hexdigest()


def walk(records: Iterable[dict[str, Any]],
         comes_later: Callable[[str, dict[str, Any]], bool],
         anchor: tuple[int, str] | None = None,
         start: tuple[int, str] | None = None) -> Verdict:
    """Check ``records`` in ``seq`` order; stop at the first entry that breaks the chain.

    ``comes_later(hash, record)`` says whether an entry after ``record`` in this walk has
    that hash (it tells a reordering from a removal). ``anchor`` is ``(seq, hash)`` of a
    tip verified earlier: the chain must still reach it unchanged, which catches a removed
    or re-hashed tail. ``start`` is ``(seq, hash)`` of the entry the records follow, when
    the walk goes on from there instead of from the first entry.
    """
    expected_seq, expected_prev = (start[0] + 1, start[1]) if start else (1, GENESIS)
    last_prev, entries = "", expected_seq - 1
    for record in records:
        seq = record["seq"]
        broken = _break(record, expected_seq, expected_prev, last_prev, comes_later)
        if broken is None and anchor is not None and seq == anchor[0] \
                and record["hash"] != anchor[1]:
            broken = Break("changed", seq, f"entry {seq} is not the entry verified earlier: "
                                           f"the chain up to it was rewritten")
        if broken is not None:
            return Verdict(entries, expected_seq - 1, expected_prev, broken)
        expected_seq, expected_prev, last_prev = seq + 1, record["hash"], record["prev_hash"]
        entries += 1
    if anchor is not None and expected_seq - 1 < anchor[0]:
        return Verdict(entries, expected_seq - 1, expected_prev, Break(
            "removed", expected_seq, f"entries {expected_seq} to {anchor[0]} were verified "
                                     f"earlier and are missing"))
    return Verdict(entries, expected_seq - 1, expected_prev)


def _break(record: dict[str, Any], expected_seq: int, expected_prev: str, last_prev: str,
           comes_later: Callable[[str, dict[str, Any]], bool]) -> Break | None:
    seq, prev = record["seq"], record["prev_hash"]
    intact = entry_hash(prev, record) == record["hash"]
    if prev == expected_prev:
        if not intact:
            return Break("changed", seq, f"entry {seq} was changed: its hash does not match "
                                         f"its content")
        if seq != expected_seq:
            return Break("inserted", seq, f"entry {seq} was inserted where entry "
                                          f"{expected_seq} belongs")
        return None
    if last_prev and prev == last_prev:
        return Break("inserted", expected_seq - 1,
                     f"entry {expected_seq - 1} was inserted: it and the entry after it "
                     f"both follow entry {expected_seq - 2}")
    if comes_later(prev, record):
        return Break("reordered", expected_seq, f"entry {expected_seq} is out of order: it "
                                                f"follows an entry that now comes after it")
    if seq > expected_seq:
        return Break("removed", expected_seq, f"entries {expected_seq} to {seq - 1} were "
                                              f"removed")
    if intact:
        return Break("changed", expected_seq - 1,
                     f"entry {expected_seq - 1} was changed and re-hashed, or an entry after "
                     f"it removed: entry {seq} does not follow it")
    return Break("changed or inserted", seq, f"entry {seq} does not follow entry {seq - 1} "
                                             f"and its hash does not match its content")


def export_line(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def read_export(path: str) -> Iterable[dict[str, Any]]:
    """The records of an export, one JSON object a line, read as the file streams."""
    with open(path, encoding="utf-8", errors="surrogatepass") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield _export_record(line, number) | {"line": number}


def _export_record(line: str, number: int) -> dict[str, Any]:
    try:
        record = loads(line)
    except ValueError as exc:
        raise ValueError(f"line {number} is not JSON: {exc}") from None
    needed = {*CANONICAL_FIELDS, "prev_hash", "hash"}
    missing = sorted(needed - set(record)) if isinstance(record, dict) else sorted(needed)
    if missing or not isinstance(record["seq"], int) \
            or not isinstance(record.get("version", 1), int) or not all(
            isinstance(record[name], str) for name in ("prev_hash", "hash")):
        raise ValueError(f"line {number} is not an audit entry (missing or wrong: {missing})")
    return record


def verify_export(path: str) -> Verdict:
    """Check an exported chain offline; a second pass tells a reordering from a removal."""
    def comes_later(wanted: str, record: dict[str, Any]) -> bool:
        return any(other["hash"] == wanted and other["line"] > record["line"]
                   for other in read_export(path))
    return walk(read_export(path), comes_later)
