"""The documentation's code blocks, as the recipe tests run them: found by a line they hold."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)


def block(page: str, holding: str, language: str = "python") -> str:
    """The one ``language`` code block of ``page`` (a path from the repository's root) with
    a line holding ``holding``, dedented (a block inside a list item is indented)."""
    found = [textwrap.dedent(match.group(3)) for match in FENCE.finditer((ROOT / page).read_text())
             if match.group(2) == language and holding in match.group(3)]
    assert len(found) == 1, f"{len(found)} {language} blocks of {page} hold {holding!r}"
    return found[0]


def replaced(code: str, old: str, new: str) -> str:
    """``code`` with its one ``old`` replaced: a test changes only what it names."""
    assert code.count(old) == 1, f"the recipe lost {old!r}"
    return code.replace(old, new)
