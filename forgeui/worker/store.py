"""The worker's checkpoint store: its ORM work and lone sync steps run on a thread pool.

Django's store runs its blocking halves (``call_blocking``) and chains of lone sync steps
(``call_in_store_thread``) on the one thread-sensitive thread, so in a worker holding many
runs every save would queue behind every other, and a node that blocks there would hold
them all up. Here each call runs on a pool thread, on that thread's own connection, kept
open across calls and closed when it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError, connection

from forgeui.store import DjangoCheckpointStore

T = TypeVar("T")


class WorkerStore(DjangoCheckpointStore):
    """``DjangoCheckpointStore`` whose lone sync steps run on the loop's default executor."""

    async def call_blocking(self, fn: Callable[[], T]) -> T:
        result: T = await sync_to_async(on_pool_thread, thread_sensitive=False)(fn)
        return result

    async def call_in_store_thread(self, fn: Callable[[], T]) -> T:
        return await self.call_blocking(fn)


def on_pool_thread(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (InterfaceError, OperationalError):
        connection.close()  # the next call on this thread reconnects
        raise
