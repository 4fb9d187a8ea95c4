"""The runtime's modules import one another in layers: no circles, and the contract
modules at the bottom never reach up into the executor."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import runtime

PACKAGE = Path(runtime.__file__).parent
# The checkpoint contract and the values it is made of: stores depend on these alone.
BOTTOM = {"runtime.checkpoint", "runtime.errors", "runtime.types", "runtime._jsonvalue",
          "runtime._ids", "runtime._patch", "runtime.signal"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """The runtime modules ``path`` imports, type-checking imports included."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[:len(package.split(".")) - node.level + 1]
            if node.module:
                found.add(".".join([*base, node.module]))
            else:
                found.update(".".join([*base, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("runtime"):
            found.add(str(node.module))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("runtime"))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imported(path) if m in modules and m != name}
            for name, path in modules.items()}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return seen


def test_no_module_imports_itself_in_a_circle() -> None:
    graph = import_graph()
    # A package's __init__ re-exports its modules, which import siblings through it.
    circles = [name for name in graph
               if name not in ("runtime", "runtime.stores") and name in reachable(graph, name)]
    assert circles == []


def test_the_bottom_layer_imports_only_itself() -> None:
    graph = import_graph()
    for name in BOTTOM:
        assert graph[name] <= BOTTOM, name


def test_the_dashboard_is_kept_from_every_private_module() -> None:
    """The import contract that keeps ``forgeui`` on the runtime's public modules names
    every private one: a new private module is forbidden to it too."""
    contracts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    forbidden = next(c["forbidden_modules"] for c in
                     contracts["tool"]["importlinter"]["contracts"]
                     if c.get("source_modules") == ["forgeui"])
    private = {module_name(p) for p in PACKAGE.rglob("_*.py") if p.name != "__init__.py"}
    assert private and set(forbidden) == private
