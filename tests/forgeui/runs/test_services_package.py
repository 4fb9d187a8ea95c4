"""The services package's shape: an answer's result is a value of its own, the answer
goes one way through the modules, the private modules stay private, and a graph of
either kind fits the seam the tasks and services call."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, override_settings

import forgeui
from forgeui.models import Approval, Interrupt
from forgeui.runs import registry, services
from forgeui.runs.graph_runner import GraphRunner

TWO = {"payments": {"nodes": ["signoff/sign"], "approvals": 2, "groups": ["finance"]}}
SERVICES = Path(services.__file__).parent


@pytest.fixture
def paused(users: dict[str, User]) -> Interrupt:
    """signoff paused, under a policy wanting two approvals from finance (alice, bob)."""
    finance = Group.objects.create(name="finance")
    for name in ("alice", "bob"):
        person = User.objects.create_user(name, password=name)
        person.groups.add(Group.objects.get(name="reviewer"), finance)
    started = services.start_run(users["supervisor"], "signoff", {"payload": {}})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


@pytest.mark.django_db(transaction=True)
@override_settings(FORGE_POLICIES=TWO)
def test_an_answer_comes_back_as_a_frozen_decided_with_its_progress(
        paused: Interrupt) -> None:
    alice, bob = User.objects.get(username="alice"), User.objects.get(username="bob")
    counted = services.answer_interrupt(alice, paused.pk, True)
    assert isinstance(counted, services.Decided)
    assert counted.answer is None and isinstance(counted.approval, Approval)
    assert counted.progress.startswith("1 of 2 approvals: alice")
    assert not hasattr(counted.approval, "progress")  # nothing hung on the model
    with pytest.raises(dataclasses.FrozenInstanceError):
        counted.progress = "changed"  # type: ignore[misc]
    decided = services.answer_interrupt(bob, paused.pk, True)
    assert decided.approval is None and decided.answer is not None
    assert decided.progress.startswith("2 of 2 approvals") and decided.made == decided.answer


def forgeui_stack(frame: FrameType | None) -> list[str]:
    """The forgeui modules on the stack from the view down, innermost last, each run of
    frames in one module counted once."""
    names: list[str] = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("forgeui.") and (not names or names[-1] != module):
            names.append(module)
        if module.startswith("forgeui.web.views"):
            return names[::-1]
        frame = frame.f_back
    return []


@dataclasses.dataclass
class Paths:
    """The forgeui modules calls reached from a view, and the stacks that entered one
    module twice."""

    reached: set[str] = dataclasses.field(default_factory=set)
    reentries: set[tuple[str, ...]] = dataclasses.field(default_factory=set)


@pytest.fixture
def paths() -> Iterator[Paths]:
    found = Paths()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_globals.get("__name__", "").startswith("forgeui."):
            stack = forgeui_stack(frame)
            found.reached.update(stack)
            if len(set(stack)) < len(stack):
                found.reentries.add(tuple(stack))

    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)


@pytest.mark.django_db(transaction=True)
@override_settings(FORGE_POLICIES=TWO)
def test_the_answers_path_crosses_no_module_twice(paused: Interrupt, paths: Paths) -> None:
    """From the page to the resumed node, through the counted vote and the one that
    decides: no module is left for another and entered again."""
    for name in ("alice", "bob"):
        client = Client()
        client.force_login(User.objects.get(username=name))
        answered = client.post(f"/interrupts/{paused.pk}/answer/",
                               {"action": "approve", "where": "page"})
        assert answered.status_code == 302
    assert Interrupt.objects.get(pk=paused.pk).status == "answered"
    assert {"forgeui.runs.services.answering", "forgeui.runs.services.voting",
            "forgeui.runs.services._recording", "forgeui.runs.tasks"} <= paths.reached
    assert paths.reentries == set()


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
