"""Structured logs: one JSON object per line, tagged with the run it is about.

``about(run_id=..., thread_id=..., interrupt_id=...)`` sets the run a stretch of work is
about (a contextvar, so it follows ``async_to_sync`` into the event loop); ``RunFilter``
on the handler copies it onto every record that did not name a run itself with
``extra=``. ``JsonFormatter`` writes ``time``, ``level``, ``logger``, ``message``, those
ids when known, and ``exc`` for a traceback. ``FORGE_LOG_FORMAT=json`` (the production
default) turns it on (``forgeui.settings``).
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

RUN_FIELDS = ("run_id", "thread_id", "interrupt_id")
# (name, value) pairs: an immutable default, shared safely by every context.
_current: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "forge_run", default=())


@contextmanager
def about(**ids: str | None) -> Iterator[None]:
    """Tag every log line inside the block with these ids (``run_id``, ...), nested ones win."""
    merged = {**dict(_current.get()), **{k: v for k, v in ids.items() if v}}
    token = _current.set(tuple(merged.items()))
    try:
        yield
    finally:
        _current.reset(token)


class RunFilter(logging.Filter):
    """Copy the current run's ids onto a record that has not got its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _current.get():
            if not getattr(record, name, None):
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; the run ids are included whenever the record has them."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }
        line.update({name: str(value) for name in RUN_FIELDS
                     if (value := getattr(record, name, None))})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)
