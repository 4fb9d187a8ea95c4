"""A task's input lent to its node, not copied, as LangGraph hands a node its state.

A node should return a new value rather than change its input in place. One that does is
caught once it has run: the input is put back as it was, from its JSON text taken before
(so the checkpoint keeps what the node was given), and the next save is written whole
rather than as a patch against values the node changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._jsonvalue import SMALL_TEXT, NotJSON, json_text, loads


@dataclass(slots=True)
class Lent:
    """``value``, lent; ``text``: its JSON before the node ran (None: it cannot change)."""

    value: Any
    text: bytes | None

    @property
    def large(self) -> bool:
        """Is its text longer than ``SMALL_TEXT``, so worth sharing rather than copying?"""
        return self.text is not None and len(self.text) > SMALL_TEXT

    def intact(self) -> bool:
        """Is the value as it was lent?"""
        if self.text is None:
            return True
        try:
            return json_text(self.value) == self.text
        except NotJSON:  # the node put something that is not JSON into it
            return False

    def put_back(self) -> None:
        """Give the value back what it held when lent, in place, so that every holder of
        it (the task, the head saved before) sees the original again."""
        assert self.text is not None
        original = loads(self.text)
        if isinstance(self.value, dict):
            self.value.clear()
            self.value.update(original)
        else:
            self.value[:] = original


def lend(value: Any) -> Lent:
    """``value`` lent to a node: its text is taken now if it is a container."""
    return Lent(value, json_text(value) if isinstance(value, dict | list) else None)
