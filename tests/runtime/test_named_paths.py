"""What the runtime's docstrings and comments point a reader to exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A repository path as the runtime's text names one: ``tests/runtime/store_conformance.py``.
NAMED = re.compile(r"\b((?:tests|bench|docs|runtime|forgeui)/[\w./]*\w)")


def test_every_path_the_runtime_names_exists() -> None:
    named = {(source.relative_to(ROOT).as_posix(), path)
             for source in (ROOT / "runtime").rglob("*.py")
             for path in NAMED.findall(source.read_text())}
    assert named, "the pattern finds the paths the runtime names"
    missing = sorted((source, path) for source, path in named
                     if not any((ROOT / candidate).exists()
                                for candidate in (path, f"{path}.py")))
    assert missing == []
