"""The graphs this site runs: ``FORGE_GRAPHS`` names, bound to the ORM checkpoint store.

Each entry is ``"module.path:attribute"`` naming a ``DurableExecutor`` or a zero-argument
factory of one, or a LangGraph graph (compiled, a builder, or a factory of either), which
``forgeui.langgraph`` runs: that package is imported only when such a graph is found, so
nothing else here needs LangGraph installed. The executor is loaded once, rebound to
``DjangoCheckpointStore`` with ``with_store`` (so a graph written against the default
in-memory store persists here) and cached for the process. A registration that fails to
load raises ``GraphUnavailable`` (an ``ImproperlyConfigured``); the system check
``check_graphs`` (``forgeui.E001``) reports every such one when the site starts, so
``manage.py check`` and ``migrate`` stop. A setting that is not such an object at all
(not JSON, a list, a value that is not text) is ``forgeui.E002``, checked by every
command, and an ``ImproperlyConfigured`` naming the entry wherever the graphs are read.
"""

from __future__ import annotations

import importlib
import inspect
import json
import threading
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver

from forgeui.runs.exceptions import GraphUnavailable, UnknownGraph
from forgeui.runs.graph_runner import GraphRunner
from forgeui.store import DjangoCheckpointStore
from runtime import DurableExecutor

if TYPE_CHECKING:  # both kinds of graph the registry hands out fit the seam: mypy checks
    from forgeui.langgraph.executor import LangGraphExecutor

    _RUNNERS: tuple[type[GraphRunner], ...] = (DurableExecutor, LangGraphExecutor)

# Graphs forge itself runs whatever FORGE_GRAPHS says; not offered for starting by hand.
REQUEST_GRAPH = "forge.request"  # forgeui.requests.graph's name (a test keeps them equal)
BUILTIN_GRAPHS = {REQUEST_GRAPH: "forgeui.requests.graph:request_graph"}
_lock = threading.Lock()
_cache: dict[str, GraphRunner] = {}


def graph_names() -> list[str]:
    return sorted(configured())


def configured() -> dict[str, str]:
    """``FORGE_GRAPHS``; ``ImproperlyConfigured`` naming what is wrong if it is malformed."""
    problem = setting_problem(settings.FORGE_GRAPHS)
    if problem is not None:
        raise ImproperlyConfigured(problem)
    return dict(settings.FORGE_GRAPHS)


def setting_problem(graphs: Any) -> str | None:
    """What makes ``graphs`` not ``{"name": "module.path:attribute", ...}``, or None."""
    shape = 'a JSON object {"name": "module.path:attribute", ...}'
    if isinstance(graphs, str):
        try:
            json.loads(graphs)
        except ValueError as exc:
            return f"FORGE_GRAPHS is not valid JSON ({exc}); it must be {shape}"
    if not isinstance(graphs, dict):
        return f"FORGE_GRAPHS must be {shape}, not {type(graphs).__name__} {graphs!r:.80}"
    for name, path in graphs.items():
        if not isinstance(path, str):
            return (f"FORGE_GRAPHS[{name!r}] = {json.dumps(path):.80}: the value must be "
                    f"text, 'module.path:attribute'")
    return None


def get_executor(name: str) -> GraphRunner:
    """The registered graph ``name`` on the ORM store; ``UnknownGraph`` if there is none."""
    with _lock:
        if name not in _cache:
            _cache[name] = _load(name)
        return _cache[name]


def executor_for(graph: str) -> GraphRunner:
    """The executor for a checkpoint's ``graph`` (the executor's own name).

    Usually that is also the registry key; when a site registers a graph under another
    name, the executor whose ``name`` matches is used. A registration that fails to load
    cannot be told apart from the one sought, so it is named in ``GraphUnavailable``.
    """
    if graph in configured() or graph in BUILTIN_GRAPHS:
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


def _load(name: str) -> GraphRunner:
    path = configured().get(name) or BUILTIN_GRAPHS.get(name)
    if path is None:
        raise UnknownGraph(name, graph_names())
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise GraphUnavailable(name, f"FORGE_GRAPHS[{name!r}] = {path!r}: use 'module:attribute'")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
        made = found if _is_graph(found) else _call_factory(found)
        if _is_langgraph(made):
            adapted: GraphRunner = importlib.import_module(LANGGRAPH_ADAPTER).executor(name, made)
            return adapted
        if not isinstance(made, DurableExecutor):  # _is_graph let nothing else through
            raise TypeError(f"not a DurableExecutor (found {type(made).__name__})")
    except Exception as exc:  # a graph module's own bug is as fatal as a typo in the path
        raise GraphUnavailable(name, f"FORGE_GRAPHS[{name!r}] = {path!r}: "
                                     f"{type(exc).__name__}: {exc}") from exc
    return made.with_store(DjangoCheckpointStore(), sync_nodes=settings.FORGE_SYNC_NODES)


# Imported by name, only for a LangGraph graph: forge itself never needs LangGraph.
LANGGRAPH_ADAPTER = "forgeui.langgraph.registered"


def _is_langgraph(found: object) -> bool:
    """A LangGraph graph or builder, told by its class's package (so without importing it)."""
    return any(cls.__module__.partition(".")[0] == "langgraph" for cls in type(found).__mro__)


def _is_graph(found: object) -> bool:
    return isinstance(found, DurableExecutor) or _is_langgraph(found)


def _call_factory(factory: object) -> object:
    made = factory() if callable(factory) and _takes_no_arguments(factory) else factory
    if not _is_graph(made):
        raise TypeError(f"neither a DurableExecutor, a LangGraph graph nor a zero-argument "
                        f"factory returning one (found {type(made).__name__})")
    return made


def check_setting(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    """System check: ``FORGE_GRAPHS`` is an object of names to dotted paths."""
    problem = setting_problem(settings.FORGE_GRAPHS)
    if problem is None:
        return []
    return [checks.Error(problem, id="forgeui.E002",
                         hint='e.g. FORGE_GRAPHS=\'{"payments": "myapp.graphs:payments"}\'')]


def check_graphs(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    """System check: every registered graph loads; each failure named with its error."""
    if setting_problem(settings.FORGE_GRAPHS) is not None:
        return []  # check_setting names it; nothing can be loaded
    problems: list[checks.CheckMessage] = []
    for name in graph_names():
        try:
            get_executor(name)
        except GraphUnavailable as exc:
            problems.append(checks.Error(
                str(exc), id="forgeui.E001",
                hint="Fix FORGE_GRAPHS: each value is 'module.path:attribute' naming a "
                     "DurableExecutor, a LangGraph graph or a zero-argument factory of "
                     "one."))
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
