"""Background work an event loop does while any inbox socket on it is open."""

from __future__ import annotations

import asyncio
import logging
import weakref
from abc import ABC, abstractmethod
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

W = TypeVar("W", bound="SocketLoopWork")


class SocketLoopWork(ABC):
    """Calls ``tick`` every ``interval`` seconds while a socket is registered.

    One instance per event loop (daphne has one; each test has its own): see ``of_loop``.
    """

    interval = 1.0

    def __init__(self) -> None:
        self.sockets: set[Any] = set()
        self.task: asyncio.Task[None] | None = None

    def add(self, consumer: Any) -> None:
        self.sockets.add(consumer)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self.run())

    def discard(self, consumer: Any) -> None:
        self.sockets.discard(consumer)
        if not self.sockets and self.task is not None:
            self.task.cancel()
            self.task = None

    async def start(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Once, before the first tick."""

    @abstractmethod
    async def tick(self) -> None:
        """The periodic work."""

    async def run(self) -> None:
        await self.start()
        while self.sockets:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except Exception:  # a database hiccup must not end the work
                logger.exception("%s failed", type(self).__name__)


_instances: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[type, Any]] = (
    weakref.WeakKeyDictionary()
)


def of_loop(cls: type[W]) -> W:
    """The running event loop's instance of ``cls``."""
    per_loop = _instances.setdefault(asyncio.get_running_loop(), {})
    if cls not in per_loop:
        per_loop[cls] = cls()
    return per_loop[cls]  # type: ignore[no-any-return]
