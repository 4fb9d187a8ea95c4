"""The public surface: one sorted ``__all__`` that says what is public, and holds every
name a public signature uses."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import types

import runtime

CORE_NAMES = {
    "DurableExecutor", "NodeContext", "InterruptSignal", "Interrupt", "Command",
    "ResumeTarget", "RunResult", "Checkpoint", "CheckpointStore", "InMemoryCheckpointStore",
    "END",
    # the error tree
    "ForgeError", "ResumeError", "StaleResumeTarget", "AmbiguousResume",
    "CheckpointConflict", "NodeError",
}
# Types that appear in the signatures of the core names, and the optional store protocols.
SIGNATURE_NAMES = {
    "RunNode", "RunStatus", "InterruptKind", "ChildPolicy", "Durability", "SyncNodes",
    "Route", "GraphShape", "BlockingStore", "SyncRunner", "Growing",
    # heads: a checkpoint without its growing fields, and how the executor goes on from one
    "Head", "Draft", "HeadStore",
    # the store kit: a base for stores that keep step records, and what its primitives take
    "RecordStore", "Step", "StoredHead", "Lineage",
}
# Names a signature may use without the runtime exporting them: the standard library's,
# and the executor's internal records that a head carries (``Head.engine``, and a
# ``Draft``'s additions and the head it last saved).
NOT_OURS = {"Any", "Callable", "Awaitable", "Coroutine", "Mapping", "Sequence", "T", "None",
            "RunBookkeeping", "Additions", "Saved"}


def isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps ``__all__`` in: CONSTANTS, then Classes, then the rest."""
    group = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return group, name


def test_all_is_sorted_and_unique() -> None:
    assert list(runtime.__all__) == sorted(runtime.__all__, key=isort_key)
    assert len(set(runtime.__all__)) == len(runtime.__all__)


def test_every_public_member_is_in_all() -> None:
    """As httpx guards it: nothing public slips in without being listed."""
    public = {name for name, value in vars(runtime).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public == set(runtime.__all__)


def test_all_holds_every_core_name() -> None:
    missing = CORE_NAMES - set(runtime.__all__)
    assert not missing


def test_extras_are_deliberate() -> None:
    """Anything public beyond the core is listed here, so growing the surface is a decision."""
    assert set(runtime.__all__) - CORE_NAMES == SIGNATURE_NAMES


def test_nothing_private_is_listed() -> None:
    assert [name for name in runtime.__all__ if name.startswith("_")] == []
    for name in runtime.__all__:
        value = getattr(runtime, name)
        if isinstance(value, type):
            assert not value.__module__.rpartition(".")[2].startswith("_"), name


def annotations_of(cls: type) -> list[str]:
    """The annotations of ``cls``'s public fields, methods and properties, as written."""
    found = [str(f.type) for f in dataclasses.fields(cls)
             if not f.name.startswith("_")] if dataclasses.is_dataclass(cls) else []
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        member = member.fget if isinstance(member, property) else member
        member = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if inspect.isfunction(member):
            found.extend(str(a) for a in member.__annotations__.values())
    return found


def test_every_name_in_a_public_signature_is_exported() -> None:
    for name in runtime.__all__:
        value = getattr(runtime, name)
        if not isinstance(value, type) or issubclass(value, BaseException):
            continue
        for annotation in annotations_of(value):
            # A private type (the run a NodeContext is built on) is the runtime's business.
            used = set(re.findall(r"\b[A-Z]\w*", annotation)) - NOT_OURS
            assert used <= set(runtime.__all__), (name, annotation)


def test_every_name_is_importable() -> None:
    module = importlib.import_module("runtime")
    for name in runtime.__all__:
        assert getattr(module, name) is not None, name
    namespace: dict[str, object] = {}
    exec("from runtime import *", namespace)
    assert set(namespace) >= CORE_NAMES


def test_error_tree() -> None:
    assert issubclass(runtime.ForgeError, Exception)
    assert issubclass(runtime.ResumeError, runtime.ForgeError)
    assert issubclass(runtime.StaleResumeTarget, runtime.ResumeError)
    assert issubclass(runtime.AmbiguousResume, runtime.ResumeError)
    assert issubclass(runtime.CheckpointConflict, runtime.ForgeError)
    assert issubclass(runtime.NodeError, runtime.ForgeError)
    assert not issubclass(runtime.CheckpointConflict, runtime.ResumeError)
    assert not issubclass(runtime.InterruptSignal, runtime.ForgeError)


def test_errors_live_in_one_module() -> None:
    errors = {runtime.ForgeError, runtime.ResumeError, runtime.StaleResumeTarget,
              runtime.AmbiguousResume, runtime.CheckpointConflict, runtime.NodeError}
    assert len({cls.__module__ for cls in errors}) == 1


def test_command_defaults() -> None:
    command = runtime.Command()
    assert (command.resume, command.resume_map, command.steering,
            command.expected_checkpoint_id, command.child_policy) == (
        None, None, None, None, "leave")
    target = runtime.ResumeTarget("r")
    assert (target.run_id, target.task_id, target.interrupt_id, target.namespace) == (
        "r", None, None, [])
