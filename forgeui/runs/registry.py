"""The graphs this site runs: ``FORGE_GRAPHS`` names, bound to the ORM checkpoint store.

Each entry is ``"module.path:attribute"`` naming a ``DurableExecutor`` or a zero-argument
factory of one. The executor is loaded once, rebound to ``DjangoCheckpointStore`` with
``with_store`` (so a graph written against the default in-memory store persists here) and
cached for the process. A registration that fails to load raises ``GraphUnavailable``
(an ``ImproperlyConfigured``); the system check ``check_graphs`` (``forgeui.E001``)
reports every such one when the site starts, so ``manage.py check`` and ``migrate`` stop.
"""

from __future__ import annotations

import importlib
import inspect
import threading

from django.conf import settings
from django.core import checks
from django.core.signals import setting_changed
from django.dispatch import receiver

from forgeui.runs.exceptions import GraphUnavailable, UnknownGraph
from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor

# Graphs forge itself runs whatever FORGE_GRAPHS says; not offered for starting by hand.
REQUEST_GRAPH = "forge.request"  # forgeui.requests.graph's name (a test keeps them equal)
BUILTIN_GRAPHS = {REQUEST_GRAPH: "forgeui.requests.graph:request_graph"}
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
    name, the executor whose ``name`` matches is used. A registration that fails to load
    cannot be told apart from the one sought, so it is named in ``GraphUnavailable``.
    """
    if graph in settings.FORGE_GRAPHS or graph in BUILTIN_GRAPHS:
        return get_executor(graph)
    broken: list[GraphUnavailable] = []
    for key in graph_names():
        try:
            executor = get_executor(key)
        except GraphUnavailable as exc:
            broken.append(exc)
            continue
        if executor.name == graph:
            return executor
    if broken:
        raise GraphUnavailable(graph, "; ".join(str(exc) for exc in broken))
    raise UnknownGraph(graph, graph_names())


def _load(name: str) -> DurableExecutor:
    path = settings.FORGE_GRAPHS.get(name) or BUILTIN_GRAPHS.get(name)
    if path is None:
        raise UnknownGraph(name, graph_names())
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise GraphUnavailable(name, f"FORGE_GRAPHS[{name!r}] = {path!r}: use 'module:attribute'")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
        executor = found if isinstance(found, DurableExecutor) else _call_factory(found)
    except Exception as exc:  # a graph module's own bug is as fatal as a typo in the path
        raise GraphUnavailable(name, f"FORGE_GRAPHS[{name!r}] = {path!r}: "
                                     f"{type(exc).__name__}: {exc}") from exc
    return executor.with_store(DjangoCheckpointStore(), sync_nodes=settings.FORGE_SYNC_NODES)


def _call_factory(factory: object) -> DurableExecutor:
    made = factory() if _takes_no_arguments(factory) else factory  # type: ignore[operator]
    if not isinstance(made, DurableExecutor):
        raise TypeError(f"neither a DurableExecutor nor a zero-argument factory returning "
                        f"one (found {type(made).__name__})")
    return made


def check_graphs(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    """System check: every registered graph loads; each failure named with its error."""
    problems: list[checks.CheckMessage] = []
    for name in graph_names():
        try:
            get_executor(name)
        except GraphUnavailable as exc:
            problems.append(checks.Error(
                str(exc), id="forgeui.E001",
                hint="Fix FORGE_GRAPHS: each value is 'module.path:attribute' naming a "
                     "DurableExecutor or a zero-argument factory of one."))
    return problems


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
