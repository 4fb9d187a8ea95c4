"""Probes for load balancers and orchestrators: anonymous, JSON, never cached.

``/healthz`` (liveness) answers from the process alone; ``/readyz`` (readiness) checks the
dependencies a request needs: the database, every graph of ``FORGE_GRAPHS`` and, when
``REDIS_URL`` is set, Redis. An anonymous caller learns only the status (and the HTTP
code says the same); a scraper holding ``FORGE_METRICS_TOKEN`` or a staff session also
learns which dependency (and which graph) failed and, with production's queue, each
``forge_worker``'s last heartbeat and runs in flight (a dead one stops beating). Why a
check failed is logged.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import NamedTuple

import psycopg
import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from forgeui.runs import registry
from forgeui.runs.exceptions import GraphUnavailable
from forgeui.worker import status
from forgeui.worker.metrics import ForgeCollector

logger = logging.getLogger(__name__)
PROBE_TIMEOUT = 2.0  # seconds; a probe that hangs is as bad as one that fails


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process serves requests. Touches no database."""
    return JsonResponse({"status": "ok"})


class GraphCheck(NamedTuple):
    """The ``FORGE_GRAPHS`` names that fail to load, or why the setting itself is wrong."""

    broken: list[str]
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.broken and not self.problem

    def shown(self) -> dict[str, object]:
        """The failure, as ``/readyz`` details name it."""
        found: dict[str, object] = {"broken_graphs": self.broken} if self.broken else {}
        if self.problem:
            found["reason"] = self.problem
        return found


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when every dependency answers, else 503; the details (what failed,
    the workers) only to a caller that may see them."""
    checks = {name: check() for name, check in dependencies().items()}
    graphs = check_graphs()
    checks["graphs"] = graphs.ok
    ready = all(checks.values())
    body: dict[str, object] = {"status": "ok" if ready else "unavailable"}
    if may_see_details(request):
        body |= details(checks, graphs)
    return JsonResponse(body, status=200 if ready else 503)


def details(checks: dict[str, bool], graphs: GraphCheck) -> dict[str, object]:
    """What failed and why, and each worker's heartbeat: not for anonymous callers."""
    return {"failed": sorted(name for name, ok in checks.items() if not ok),
            "checks": {name: "ok" if ok else "failed" for name, ok in checks.items()},
            **graphs.shown(), **heartbeats(checks["database"])}


def heartbeats(database_ok: bool) -> dict[str, object]:
    """Each ``forge_worker``'s last heartbeat, with production's queue."""
    if status.queue_enabled() and database_ok:
        return {"workers": status.workers()}
    return {}


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus' text format, for a scraper holding ``FORGE_METRICS_TOKEN`` as a bearer
    token; without that setting there is nothing here."""
    if not settings.FORGE_METRICS_TOKEN:
        raise Http404("metrics are off: set FORGE_METRICS_TOKEN")
    if not holds_metrics_token(request):
        return JsonResponse({"detail": "a bearer token is required"}, status=401,
                            headers={"WWW-Authenticate": "Bearer"})
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ForgeCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def holds_metrics_token(request: HttpRequest) -> bool:
    """Does the request carry ``Authorization: Bearer $FORGE_METRICS_TOKEN`` (set)?"""
    token = settings.FORGE_METRICS_TOKEN
    if not token:
        return False
    given = request.headers.get("Authorization", "").removeprefix("Bearer ")
    return hmac.compare_digest(given.encode(), token.encode())


def may_see_details(request: HttpRequest) -> bool:
    """Worker ids, heartbeats and failed checks: for the scraper and for staff only."""
    user = getattr(request, "user", None)
    return holds_metrics_token(request) or bool(user is not None and user.is_staff)


def dependencies() -> dict[str, Callable[[], bool]]:
    found: dict[str, Callable[[], bool]] = {"database": database_ok}
    if settings.REDIS_URL:
        found["redis"] = redis_ok
    return found


def check_graphs() -> GraphCheck:
    """The ``FORGE_GRAPHS`` names that fail to load (a loaded graph is cached: cheap); a
    setting that is not such an object at all fails as a whole, with the reason."""
    try:
        names = registry.graph_names()
    except ImproperlyConfigured as exc:
        logger.warning("readyz: %s", exc)
        return GraphCheck([], str(exc)[:200])
    broken = []
    for name in names:
        try:
            registry.get_executor(name)
        except GraphUnavailable:
            logger.warning("readyz: graph %r does not load", name, exc_info=True)
            broken.append(name)
    return GraphCheck(broken)


def database_ok() -> bool:
    # A probe has its own deadline, as Redis's below: the pool is asked with the probe's
    # timeout, not the one every request waits (FORGE_DB_POOL_TIMEOUT).
    pool = getattr(connection, "pool", None)
    try:
        if pool is not None:
            with pool.connection(timeout=PROBE_TIMEOUT) as pooled:
                pooled.execute("SELECT 1")
        else:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
    except (DatabaseError, psycopg.Error):
        logger.warning("readyz: database unreachable", exc_info=True)
        connection.close()  # the next probe reconnects instead of reusing a broken one
        return False
    return True


def redis_ok() -> bool:
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=PROBE_TIMEOUT,
                                  socket_connect_timeout=PROBE_TIMEOUT)
    try:
        return bool(client.ping())
    except redis.RedisError:
        logger.warning("readyz: redis unreachable", exc_info=True)
        return False
    finally:
        client.close()
