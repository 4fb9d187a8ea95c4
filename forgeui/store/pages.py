"""A thread's checkpoints as a sequence that paginators slice without rebuilding it all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload


class ThreadPages:
    """``count`` items at positions 1..count; a slice asks ``fetch(first, last)`` for
    just the positions it covers (oldest first), newest first if asked."""

    def __init__(self, count: int, fetch: Callable[[int, int], list[Any]],
                 newest_first: bool = False) -> None:
        self.total, self.fetch, self.newest_first = count, fetch, newest_first

    def __len__(self) -> int:
        return self.total

    def count(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, int):
            found = self[index:index + 1]
            if not found:
                raise IndexError(index)
            return found[0]
        start, stop, _ = index.indices(self.total)
        if start >= stop:
            return []
        if not self.newest_first:
            return self.fetch(start + 1, stop)
        return list(reversed(self.fetch(self.total - stop + 1, self.total - start)))
