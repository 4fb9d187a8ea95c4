"""Connections opened in LangGraph's own threads, closed when those threads end.

LangGraph saves from threads of its own that end with each ``invoke``; nothing else would
close the connections Django opens in them.
"""

from __future__ import annotations

import contextlib
import threading

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper


class _ClosesAtThreadExit:
    """Closes a thread's connection when the thread ends (its thread-locals go then)."""

    def __init__(self, wrapper: BaseDatabaseWrapper) -> None:
        self.wrapper = wrapper

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.wrapper.close()


_THREAD = threading.local()


def close_at_thread_exit(using: str) -> None:
    """Close this thread's connection to ``using`` when the thread ends (not the main
    thread's, which Django's own request cycle looks after)."""
    if threading.current_thread() is threading.main_thread():
        return
    guards = getattr(_THREAD, "guards", None)
    if guards is None:
        guards = _THREAD.guards = {}
    if using not in guards:
        guards[using] = _ClosesAtThreadExit(connections[using])
