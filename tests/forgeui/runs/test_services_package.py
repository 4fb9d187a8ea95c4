"""The services package's shape: its private modules stay private, its modules and
functions stay small, and a graph of either kind fits the seam the tasks and services
call. (What an answer comes back as, and the way it takes through the modules, are
tested from the page: tests/forgeui/web/test_policy_pages.py.)"""

from __future__ import annotations

import ast
import inspect
import tomllib
from pathlib import Path

import pytest

import forgeui
from forgeui.runs import registry, services
from forgeui.runs.graph_runner import GraphRunner

SERVICES = Path(services.__file__).parent


def test_the_private_modules_contract_names_every_private_module() -> None:
    """Only the package imports its ``_`` modules: the contract saying so names them all."""
    config = tomllib.loads((Path(forgeui.__file__).parent.parent / "pyproject.toml")
                           .read_text())
    protected = next(c["protected_modules"] for c in config["tool"]["importlinter"]["contracts"]
                     if c.get("allowed_importers") == ["forgeui.runs.services"])
    private = {"forgeui.runs.services." + ".".join(p.relative_to(SERVICES).with_suffix("").parts)
               for p in SERVICES.rglob("_*.py") if p.name != "__init__.py"}
    assert private and set(protected) == private


def test_every_services_module_is_small_and_so_is_every_function() -> None:
    modules = sorted(SERVICES.rglob("*.py"))
    assert len(modules) > 5  # a package of verbs, not one module
    for path in modules:
        source = path.read_text()
        assert source.count("\n") <= 400, path
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno - node.lineno < 40, f"{path}: {node.name}"


MEMBERS = [name for name in dir(GraphRunner) if not name.startswith("_")]


@pytest.mark.django_db
@pytest.mark.parametrize("graph", ["signoff", "lg_two", registry.REQUEST_GRAPH])
def test_a_registered_graph_of_either_kind_fits_the_seam(graph: str) -> None:
    """What tasks and services call is there, taking what they pass (mypy checks the
    types; this checks the registry's objects themselves)."""
    runner = registry.get_executor(graph)
    for name in MEMBERS:
        wanted = getattr(GraphRunner, name)
        if isinstance(wanted, property):
            assert hasattr(runner, name), f"{graph}: {name}"
            continue
        given = inspect.signature(getattr(runner, name)).parameters
        assert list(given) == list(inspect.signature(wanted).parameters)[1:], name
