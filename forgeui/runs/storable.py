"""Text a JSON value may hold and still be stored: no NUL, no lone surrogate.

PostgreSQL's ``jsonb`` and ``text`` cannot hold NUL, and a lone surrogate is not UTF-8:
such a value, which ``json.loads`` happily makes from ``"\\u0000"`` or ``"\\ud800"``,
failed only when saved, after the rows before it had been written.
"""

from __future__ import annotations

from typing import Any


def text_problem(value: Any) -> str | None:
    """Why a string somewhere in ``value`` (a key or a value) cannot be stored, or None."""
    stack = [value]
    while stack:  # no recursion: a value may be nested deeper than Python's stack
        item = stack.pop()
        if isinstance(item, str):
            if problem := _of_text(item):
                return problem
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


def _of_text(text: str) -> str | None:
    if "\x00" in text:
        return "it holds a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a lone surrogate (such as \\ud800), which cannot be stored"
    return None
