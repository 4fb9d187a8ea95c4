"""The graphs this site runs: ``FORGE_GRAPHS`` names, bound to the ORM checkpoint store.

Each entry is ``"module.path:attribute"`` naming a ``DurableExecutor`` or a zero-argument
factory of one. The executor is loaded once, rebound to ``DjangoCheckpointStore`` with
``with_store`` (so a graph written against the default in-memory store persists here) and
cached for the process.
"""

from __future__ import annotations

import importlib
import inspect
import threading

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from runtime import DurableExecutor

from .exceptions import UnknownGraph
from .store import DjangoCheckpointStore

_lock = threading.Lock()
_cache: dict[str, DurableExecutor] = {}


def graph_names() -> list[str]:
    return sorted(settings.FORGE_GRAPHS)


def get_executor(name: str) -> DurableExecutor:
    """The registered graph ``name`` on the ORM store; ``UnknownGraph`` if there is none."""
    with _lock:
        if name not in _cache:
            _cache[name] = _load(name)
        return _cache[name]


def executor_for(graph: str) -> DurableExecutor:
    """The executor for a checkpoint's ``graph`` (the executor's own name).

    Usually that is also the registry key; when a site registers a graph under another
    name, the executor whose ``name`` matches is used.
    """
    if graph in settings.FORGE_GRAPHS:
        return get_executor(graph)
    for key in graph_names():
        executor = get_executor(key)
        if executor.name == graph:
            return executor
    raise UnknownGraph(graph, graph_names())


def _load(name: str) -> DurableExecutor:
    path = settings.FORGE_GRAPHS.get(name)
    if path is None:
        raise UnknownGraph(name, graph_names())
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ImproperlyConfigured(f"FORGE_GRAPHS[{name!r}] = {path!r}: use 'module:attribute'")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ImproperlyConfigured(f"FORGE_GRAPHS[{name!r}] = {path!r}: {exc}") from exc
    executor = found if isinstance(found, DurableExecutor) else _call_factory(name, path, found)
    return executor.with_store(DjangoCheckpointStore(), sync_nodes=settings.FORGE_SYNC_NODES)


def _call_factory(name: str, path: str, factory: object) -> DurableExecutor:
    made = factory() if _takes_no_arguments(factory) else factory  # type: ignore[operator]
    if not isinstance(made, DurableExecutor):
        raise ImproperlyConfigured(
            f"FORGE_GRAPHS[{name!r}] = {path!r} is neither a DurableExecutor nor a "
            f"zero-argument factory returning one (found {type(made).__name__})"
        )
    return made


def _takes_no_arguments(factory: object) -> bool:
    if not callable(factory):
        return False
    try:
        inspect.signature(factory).bind()
    except (TypeError, ValueError):
        return False
    return True


def clear() -> None:
    with _lock:
        _cache.clear()


@receiver(setting_changed)
def _forget_graphs(*, setting: str, **kwargs: object) -> None:
    if setting in ("FORGE_GRAPHS", "FORGE_SYNC_NODES"):
        clear()
