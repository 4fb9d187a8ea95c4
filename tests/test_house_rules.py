"""House rules a reader relies on: a module holds one concept, a function fits on a screen.

Every module under ``forgeui/`` and ``runtime/`` (migrations aside: they are generated and
frozen) stays within ``MAX_MODULE_LINES`` and at grade A of radon's maintainability index,
and every function within ``MAX_FUNCTION_LINES`` from its ``def`` to its last line. A
failure names every offender, so one run lists the whole job.
"""

from __future__ import annotations

import ast
from pathlib import Path

from radon.metrics import mi_rank, mi_visit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("forgeui", "runtime")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40
# "path:function" -> why it cannot be split yet. Keep it short, and empty when possible.
ALLOWED_FUNCTIONS: dict[str, str] = {}


def modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                  if "migrations" not in path.relative_to(ROOT).parts)


def shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def long_functions(source: str, name: str) -> list[str]:
    """``name:line function: N lines`` for each function (nested ones too) over the limit."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES and f"{name}:{node.name}" not in ALLOWED_FUNCTIONS:
                found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def offenders(message: str, found: list[str]) -> str:
    return f"{message} ({len(found)}):\n  " + "\n  ".join(found)


def test_modules_are_at_most_400_lines() -> None:
    found = [f"{shown(path)}: {count} lines" for path in modules()
             if (count := len(path.read_text(encoding="utf-8").splitlines()))
             > MAX_MODULE_LINES]
    assert not found, offenders("split these modules by concept", found)


def test_functions_are_at_most_40_lines() -> None:
    found = [line for path in modules()
             for line in long_functions(path.read_text(encoding="utf-8"), shown(path))]
    assert not found, offenders("shorten these functions", found)


def test_modules_are_grade_a_in_maintainability() -> None:
    found = []
    for path in modules():
        score = mi_visit(path.read_text(encoding="utf-8"), multi=True)
        if mi_rank(score) != "A":
            found.append(f"{shown(path)}: {mi_rank(score)} ({score:.1f})")
    assert not found, offenders("below grade A (radon mi -s)", found)


def test_a_long_function_is_found_wherever_it_is_nested() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    source = (f"def fits():\n{body}\n"
              f"class Holder:\n    async def method(self):\n"
              + "".join(f"    {line}\n" for line in body.splitlines())
              + "        return 1\n")
    assert long_functions(source, "m.py") == [f"m.py:{MAX_FUNCTION_LINES + 3} method: "
                                              f"{MAX_FUNCTION_LINES + 1} lines"]
