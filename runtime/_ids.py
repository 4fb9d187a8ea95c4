"""Identifiers and clocks: random where uniqueness matters, derived where stability does."""

from __future__ import annotations

import hashlib
import os
import time
import uuid

_FORGE = uuid.UUID("6f9b1c3e-2a51-4d1e-9c0b-5f3f1b7a2d40")
_FORGE_BYTES = _FORGE.bytes


def new_id() -> str:
    """``uuid.uuid4().hex``, without building a ``UUID`` (a few are made per step)."""
    return _stamped(bytearray(os.urandom(16)), 4)


def derived_id(*parts: object) -> str:
    """Same parts, same id: task and interrupt ids survive re-runs of a node.

    ``uuid.uuid5(_FORGE, name).hex``, computed as RFC 4122 defines it (the test holds
    the two equal): ids saved by earlier versions must keep matching."""
    name = "\x1f".join(map(str, parts)).encode()
    return _stamped(bytearray(hashlib.sha1(_FORGE_BYTES + name).digest()[:16]), 5)


def _stamped(raw: bytearray, version: int) -> str:
    """16 bytes as a UUID of ``version`` (its version and RFC 4122 variant bits), in hex."""
    raw[6] = raw[6] & 0x0F | version << 4
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()


def task_id(run_id: str, step: int, node: str) -> str:
    return derived_id("task", run_id, step, node)


def interrupt_id(run_id: str, task: str, kind: str, order: int) -> str:
    return derived_id("interrupt", run_id, task, kind, order)


def now_ms() -> int:
    return time.time_ns() // 1_000_000
