"""Identifiers and clocks: random where uniqueness matters, derived where stability does."""

from __future__ import annotations

import time
import uuid

_FORGE = uuid.UUID("6f9b1c3e-2a51-4d1e-9c0b-5f3f1b7a2d40")


def new_id() -> str:
    return uuid.uuid4().hex


def derived_id(*parts: object) -> str:
    """Same parts, same id: task and interrupt ids survive re-runs of a node."""
    return uuid.uuid5(_FORGE, "\x1f".join(map(str, parts))).hex


def task_id(run_id: str, step: int, node: str) -> str:
    return derived_id("task", run_id, step, node)


def interrupt_id(run_id: str, task: str, kind: str, order: int) -> str:
    return derived_id("interrupt", run_id, task, kind, order)


def now_ms() -> int:
    return time.time_ns() // 1_000_000
