"""``FORGE_GRAPHS`` names LangGraph graphs as it names forge graphs; forge itself does not
import LangGraph until one is registered."""

from __future__ import annotations

import json
import subprocess
import sys

from forgeui.langgraph.checkpointer import checkpointer
from forgeui.langgraph.executor import LangGraphExecutor
from forgeui.runs import registry
from tests.forgeui.conftest import ROOT


def test_builder_compiled_and_factory_all_register() -> None:
    for name in ("lg_two", "lg_parallel", "lg_breakpoint"):
        executor = registry.get_executor(name)
        assert isinstance(executor, LangGraphExecutor) and executor.name == name
        assert executor.graph.checkpointer is checkpointer()
    assert registry.get_executor("lg_breakpoint").breakpoints == {"send"}
    assert registry.get_executor("lg_two").shape.nodes == ("twice", "confirm")


LOAD_ALL = """
import sys, django
django.setup()
from forgeui.runs import registry
for name in registry.graph_names():
    registry.get_executor(name)
print("langgraph" in sys.modules)
"""


def run_with_graphs(graphs: dict[str, str]) -> str:
    env = {"DJANGO_SETTINGS_MODULE": "forgeui.settings", "PYTHONPATH": str(ROOT),
           "FORGE_GRAPHS": json.dumps(graphs), "DATABASE_URL": "sqlite:///:memory:"}
    done = subprocess.run([sys.executable, "-c", LOAD_ALL], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_forge_graphs_alone_never_import_langgraph() -> None:
    assert run_with_graphs({"transfer": "forgeui.demo.graphs:transfer"}) == "False"
    assert run_with_graphs({"lg": "tests.forgeui.langgraph.team_graphs:two_interrupts"}) == "True"
