"""Connections opened in LangGraph's own threads, closed when those threads end.

LangGraph saves from threads of its own that end with each ``invoke``; nothing else would
close the connections Django opens in them. ``off_loop`` runs blocking work on an event
loop's pool, whose threads live on: a connection that broke there is closed at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections
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


T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: Any, using: str = DEFAULT_DB_ALIAS,
                   **kwargs: Any) -> T:
    """``fn(...)`` on the running loop's pool (each pool thread on a connection of its
    own), never on the one thread Django's async ORM calls share."""
    result: T = await sync_to_async(_closing_if_broken, thread_sensitive=False)(
        using, fn, *args, **kwargs)
    return result


def _closing_if_broken(using: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    close_at_thread_exit(using)  # a pool that goes with its loop takes its connections
    try:
        return fn(*args, **kwargs)
    except (InterfaceError, OperationalError):
        connections[using].close()  # the next call on this pool thread reconnects
        raise
