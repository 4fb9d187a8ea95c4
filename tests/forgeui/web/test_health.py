"""``/healthz`` and ``/readyz``: anonymous JSON probes; 503 names what failed."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from django.test import Client, override_settings

from forgeui.runs import registry
from tests.forgeui.conftest import ROOT

CLOSED = "127.0.0.1:1"  # nothing listens on port 1: connections are refused at once


def test_healthz_is_anonymous_json_and_needs_no_database() -> None:
    response = Client().get("/healthz")  # no django_db mark: a query would raise
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]
    assert Client().post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_is_ready_with_the_database_alone() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "failed": [],
                               "checks": {"database": "ok", "graphs": "ok"}}


@pytest.mark.django_db
def test_readyz_is_503_naming_a_graph_that_does_not_load(settings: Any) -> None:
    registry.clear()
    settings.FORGE_GRAPHS = {**settings.FORGE_GRAPHS, "broken": "forgeui.no_such_module:graph",
                             "typo": "forgeui.demo.graphs"}
    try:
        response = Client().get("/readyz")
    finally:
        registry.clear()
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failed": ["graphs"],
                               "checks": {"database": "ok", "graphs": "failed"},
                               "broken_graphs": ["broken", "typo"]}


@pytest.mark.redis
@pytest.mark.django_db
@override_settings(REDIS_URL="redis://127.0.0.1:6379/0")
def test_readyz_checks_redis_when_it_is_configured() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "redis": "ok", "graphs": "ok"}


@pytest.mark.django_db
@override_settings(REDIS_URL=f"redis://{CLOSED}/0")
def test_readyz_is_503_naming_redis_when_redis_is_down() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failed": ["redis"],
                               "checks": {"database": "ok", "redis": "failed",
                                          "graphs": "ok"}}


PROBE = """
import json, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="localhost")
ready, alive = client.get("/readyz"), client.get("/healthz")
print(json.dumps({"ready": [ready.status_code, ready.json()],
                  "alive": [alive.status_code, alive.json()]}))
"""


def test_readyz_is_503_naming_the_database_when_it_is_unreachable() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "DJANGO_SETTINGS_MODULE": "forgeui.settings",
           "DATABASE_URL": f"postgres://postgres@{CLOSED}/forge", "REDIS_URL": f"redis://{CLOSED}/0"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["alive"] == [200, {"status": "ok"}]  # liveness does not care
    assert found["ready"] == [503, {"status": "unavailable", "failed": ["database", "redis"],
                                    "checks": {"database": "failed", "redis": "failed",
                                               "graphs": "ok"}}]
    assert "readyz: database unreachable" in done.stderr  # why goes to the log
