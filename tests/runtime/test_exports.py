"""The public surface (SPEC §1, STYLE 6): one sorted ``__all__`` that says what is public."""

from __future__ import annotations

import importlib
import types

import runtime

SPEC_NAMES = {
    "DurableExecutor", "NodeContext", "InterruptSignal", "Interrupt", "Command",
    "ResumeTarget", "RunResult", "Checkpoint", "CheckpointStore", "InMemoryCheckpointStore",
    "END",
    # §1.9
    "ForgeError", "ResumeError", "StaleResumeTarget", "AmbiguousResume",
    "CheckpointConflict", "NodeError",
}


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


def test_all_holds_every_spec_name() -> None:
    missing = SPEC_NAMES - set(runtime.__all__)
    assert not missing


def test_extras_are_deliberate() -> None:
    """Anything public beyond the SPEC is listed here, so growing the surface is a decision."""
    assert set(runtime.__all__) - SPEC_NAMES == {"RunNode"}


def test_every_name_is_importable() -> None:
    module = importlib.import_module("runtime")
    for name in runtime.__all__:
        assert getattr(module, name) is not None, name
    namespace: dict[str, object] = {}
    exec("from runtime import *", namespace)
    assert set(namespace) >= SPEC_NAMES


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
