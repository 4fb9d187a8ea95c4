"""FORGE_GRAPHS: dotted paths to executors or factories, bound to the ORM store."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from forgeui import registry
from forgeui.exceptions import UnknownGraph
from forgeui.settings import DEFAULT_GRAPHS
from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor, examples


def test_the_default_graphs_are_the_demo_graphs() -> None:
    assert DEFAULT_GRAPHS == examples.GRAPHS
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
        ("runtime.examples", "use 'module:attribute'"),
        ("no_such_module:graph", "No module named"),
        ("runtime.examples:missing", "has no attribute"),
        ("runtime.examples:ACTIONS", "neither a DurableExecutor nor a zero-argument factory"),
        ("runtime.examples:plan", "neither a DurableExecutor nor a zero-argument factory"),
    ],
)
def test_bad_paths_fail_with_the_setting_named(path: str, message: str) -> None:
    with override_settings(FORGE_GRAPHS={"bad": path}), \
            pytest.raises(ImproperlyConfigured, match=rf"FORGE_GRAPHS\['bad'\].*{message}"):
        registry.get_executor("bad")


def test_executor_for_finds_a_graph_registered_under_another_name() -> None:
    with override_settings(FORGE_GRAPHS={"payments": "runtime.examples:transfer"}):
        assert registry.executor_for("transfer").name == "transfer"
        with pytest.raises(UnknownGraph):
            registry.executor_for("deploy")
