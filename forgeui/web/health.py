"""Probes for load balancers and orchestrators: anonymous, JSON, never cached.

``/healthz`` (liveness) answers from the process alone; ``/readyz`` (readiness) checks the
dependencies a request needs: the database, every graph of ``FORGE_GRAPHS`` and, when
``REDIS_URL`` is set, Redis. Which dependency (and which graph) failed is named; why is
logged, not shown to anonymous callers. With production's queue it also lists each
``forge_worker``'s last heartbeat and runs in flight (a dead one stops beating).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable

import redis
from django.conf import settings
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


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when every dependency answers, else 503 naming the failed ones."""
    checks = {name: check() for name, check in dependencies().items()}
    broken = broken_graphs()
    checks["graphs"] = not broken
    failed = sorted(name for name, ok in checks.items() if not ok)
    body: dict[str, object] = {
        "status": "unavailable" if failed else "ok", "failed": failed,
        "checks": {name: "ok" if ok else "failed" for name, ok in checks.items()}}
    if broken:
        body["broken_graphs"] = broken
    if status.queue_enabled() and checks["database"]:
        body["workers"] = status.workers()
    return JsonResponse(body, status=503 if failed else 200)


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus' text format, for a scraper holding ``FORGE_METRICS_TOKEN`` as a bearer
    token; without that setting there is nothing here."""
    token = settings.FORGE_METRICS_TOKEN
    if not token:
        raise Http404("metrics are off: set FORGE_METRICS_TOKEN")
    given = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not hmac.compare_digest(given.encode(), token.encode()):
        return JsonResponse({"detail": "a bearer token is required"}, status=401,
                            headers={"WWW-Authenticate": "Bearer"})
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ForgeCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def dependencies() -> dict[str, Callable[[], bool]]:
    found: dict[str, Callable[[], bool]] = {"database": database_ok}
    if settings.REDIS_URL:
        found["redis"] = redis_ok
    return found


def broken_graphs() -> list[str]:
    """The ``FORGE_GRAPHS`` names that fail to load (a loaded graph is cached: cheap)."""
    broken = []
    for name in registry.graph_names():
        try:
            registry.get_executor(name)
        except GraphUnavailable:
            logger.warning("readyz: graph %r does not load", name, exc_info=True)
            broken.append(name)
    return broken


def database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
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
