"""FORGE_GRAPHS: dotted paths to executors or factories, bound to the ORM store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from forgeui.demo import graphs as examples
from forgeui.runs import registry
from forgeui.runs.exceptions import GraphUnavailable, UnknownGraph
from forgeui.runs.policies.checks import check_policies
from forgeui.settings import DEFAULT_GRAPHS
from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor
from tests.forgeui.conftest import ROOT
from tests.forgeui.deployment.test_settings import settings_with


def test_the_default_graphs_are_the_demo_graphs() -> None:
    assert DEFAULT_GRAPHS == {**examples.GRAPHS, **examples.LANGGRAPH_GRAPHS}
    for name in DEFAULT_GRAPHS:
        assert registry.get_executor(name).name == name


def test_graphs_run_on_the_orm_store_and_are_cached() -> None:
    executor = registry.get_executor("transfer")
    assert isinstance(executor.store, DjangoCheckpointStore)
    assert examples.transfer.store is not executor.store  # the module's graph is untouched
    assert registry.get_executor("transfer") is executor


def test_a_factory_is_called_once() -> None:
    pipeline = registry.get_executor("pipeline")
    assert isinstance(pipeline, DurableExecutor) and pipeline.name == "pipeline"
    assert registry.get_executor("pipeline") is pipeline


def test_unknown_names_list_the_registered_ones() -> None:
    with pytest.raises(UnknownGraph, match=r"unknown graph 'nope'; registered graphs: .*transfer"):
        registry.get_executor("nope")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("forgeui.demo.graphs", "use 'module:attribute'"),
        ("no_such_module:graph", "No module named"),
        ("forgeui.demo.graphs:missing", "has no attribute"),
        ("forgeui.demo.graphs:ACTIONS", "neither a DurableExecutor, a LangGraph graph nor"),
        ("forgeui.demo.graphs:plan", "neither a DurableExecutor, a LangGraph graph nor"),
        ("tests.forgeui.graphs:broken_factory", "RuntimeError: no credentials"),
    ],
)
def test_bad_paths_fail_with_the_setting_named(path: str, message: str) -> None:
    with override_settings(FORGE_GRAPHS={"bad": path}), \
            pytest.raises(ImproperlyConfigured, match=rf"FORGE_GRAPHS\['bad'\].*{message}"):
        registry.get_executor("bad")


def test_executor_for_finds_a_graph_registered_under_another_name() -> None:
    with override_settings(FORGE_GRAPHS={"payments": "forgeui.demo.graphs:transfer"}):
        assert registry.executor_for("transfer").name == "transfer"
        with pytest.raises(UnknownGraph):
            registry.executor_for("deploy")


def test_a_registration_that_fails_is_named_when_another_graph_is_sought() -> None:
    with override_settings(FORGE_GRAPHS={"payments": "no_such_module:graph"}), \
            pytest.raises(GraphUnavailable, match=r"graph 'transfer' cannot be loaded.*"
                                                  r"FORGE_GRAPHS\['payments'\]"):
        registry.executor_for("transfer")


def test_the_system_check_names_every_graph_that_fails_to_load() -> None:
    broken = {**DEFAULT_GRAPHS, "typo": "forgeui.demo.grahps:transfer",
              "gone": "forgeui.demo.graphs:no_such_graph"}
    with override_settings(FORGE_GRAPHS=broken):
        problems = registry.check_graphs()
        assert sorted(p.msg.split(" cannot")[0] for p in problems) == ["graph 'gone'",
                                                                       "graph 'typo'"]
        assert {p.id for p in problems} == {"forgeui.E001"}
        assert "No module named 'forgeui.demo.grahps'" in " ".join(p.msg for p in problems)
        with pytest.raises(SystemCheckError, match=r"forgeui\.E001"):
            call_command("check")
    assert registry.check_graphs() == []


def test_manage_check_fails_on_a_typo_in_forge_graphs() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "FORGE_GRAPHS": json.dumps({"payments": "forgeui.demo.grahps:transfer"})}
    done = subprocess.run([sys.executable, "manage.py", "check"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "forgeui.E001" in done.stderr and "graph 'payments' cannot be loaded" in done.stderr
    assert "No module named 'forgeui.demo.grahps'" in done.stderr


@pytest.mark.parametrize(("graphs", "message"), [
    ('{"payments": "myapp.graphs:pay"', "FORGE_GRAPHS is not valid JSON (Expecting ',' "
                                         "delimiter: line 1 column 32"),
    (["myapp.graphs:pay"], "FORGE_GRAPHS must be a JSON object"),
    ({"payments": 5}, "FORGE_GRAPHS['payments'] = 5: the value must be text"),
    ({"payments": {"path": "myapp.graphs:pay"}}, "FORGE_GRAPHS['payments'] = {\"path\""),
])
def test_a_malformed_forge_graphs_is_named_not_a_traceback(graphs: object,
                                                            message: str) -> None:
    with override_settings(FORGE_GRAPHS=graphs):
        [problem] = registry.check_setting()
        assert problem.id == "forgeui.E002" and problem.msg.startswith(message)
        assert registry.check_graphs() == []
        with pytest.raises(ImproperlyConfigured) as refused:
            registry.graph_names()
        assert str(refused.value) == problem.msg
    assert registry.check_setting() == []


def test_manage_check_names_forge_graphs_that_is_not_json() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "FORGE_GRAPHS": '{"payments": "myapp.graphs:pay",}'}
    done = subprocess.run([sys.executable, "manage.py", "check"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "forgeui.E002" in done.stderr and "FORGE_GRAPHS is not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr


def test_policies_are_not_checked_against_graphs_that_cannot_be_read() -> None:
    policies = {"p": {"nodes": ["payments/approve"], "approvals": 2}}
    with override_settings(FORGE_GRAPHS='{"payments": "myapp.graphs:pay",}',
                           FORGE_POLICIES=policies):
        assert check_policies() == []  # E002 says what is wrong; no W010 per character
    with override_settings(FORGE_GRAPHS={}, FORGE_POLICIES=policies):
        assert [w.id for w in check_policies()] == ["forgeui.W010"]


def test_commands_run_often_check_the_settings_but_load_no_graph(tmp_path: Path) -> None:
    """expire_interrupts (cron, every minute) is not made to import every graph's libraries
    by the graph check; a broken graph is named where it is used, and a setting the
    commands cannot work with still stops them, named."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'forge.sqlite3'}",
           "FORGE_GRAPHS": json.dumps({"payments": "forgeui.demo.grahps:transfer"})}
    subprocess.run([sys.executable, "manage.py", "migrate", "--skip-checks", "-v0"], env=env,
                   cwd=ROOT, check=True, timeout=120)
    swept = subprocess.run([sys.executable, "manage.py", "expire_interrupts"], env=env,
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert swept.returncode == 0, swept.stderr
    started = subprocess.run([sys.executable, "manage.py", "start_run", "payments"], env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert started.returncode != 0  # the graph is named where it is used
    assert "graph 'payments' cannot be loaded" in started.stderr, started.stderr
    refused = subprocess.run([sys.executable, "manage.py", "expire_interrupts"],
                             env={**env, "FORGE_POLICIES": "{not json"}, cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "forgeui.E010" in refused.stderr


def test_forge_examples_keeps_the_example_graphs_beside_a_sites_own() -> None:
    own = json.dumps({"mine": "tests.forgeui.graphs:race"})
    assert settings_with(FORGE_GRAPHS=own)["graphs"] == {"mine": "tests.forgeui.graphs:race"}
    kept = settings_with(FORGE_GRAPHS=own, FORGE_EXAMPLES="1")["graphs"]
    assert kept == {**DEFAULT_GRAPHS, "mine": "tests.forgeui.graphs:race"}
