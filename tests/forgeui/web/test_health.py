"""``/healthz`` and ``/readyz``: anonymous JSON probes. An anonymous caller of ``/readyz``
learns only the status; the scraper's token or a staff session also learns what failed
and which workers beat."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from forgeui.runs import registry
from forgeui.web import health
from tests.forgeui.conftest import ROOT, logged_in

CLOSED = "127.0.0.1:1"  # nothing listens on port 1: connections are refused at once
TOKEN = "scrape-" + "r" * 30
WORKERS = [{"id": 7, "last_heartbeat": "2026-01-01T00:00:00+00:00", "seconds_ago": 1.0,
            "in_flight": 3}]


def scraper() -> Client:
    """A client holding the metrics token (the tests set ``FORGE_METRICS_TOKEN``)."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")


def test_healthz_is_anonymous_json_and_needs_no_database() -> None:
    response = Client().get("/healthz")  # no django_db mark: a query would raise
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]
    assert Client().post("/healthz").status_code == 405


@pytest.mark.django_db
@override_settings(FORGE_METRICS_TOKEN=TOKEN)
def test_readyz_is_ready_with_the_database_alone() -> None:
    response = scraper().get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "failed": [],
                               "checks": {"database": "ok", "graphs": "ok"}}


@pytest.mark.django_db
def test_readyz_is_503_naming_a_graph_that_does_not_load(settings: Any) -> None:
    registry.clear()
    settings.FORGE_METRICS_TOKEN = TOKEN
    settings.FORGE_GRAPHS = {**settings.FORGE_GRAPHS, "broken": "forgeui.no_such_module:graph",
                             "typo": "forgeui.demo.graphs"}
    try:
        response, anonymous = scraper().get("/readyz"), Client().get("/readyz")
    finally:
        registry.clear()
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failed": ["graphs"],
                               "checks": {"database": "ok", "graphs": "failed"},
                               "broken_graphs": ["broken", "typo"]}
    assert anonymous.status_code == 503 and anonymous.json() == {"status": "unavailable"}


@pytest.mark.django_db
@pytest.mark.parametrize("graphs", ["{not json", '["a", "b"]', {"a": 1}, 5])
def test_readyz_is_503_with_a_reason_when_forge_graphs_is_malformed(
        settings: Any, graphs: Any) -> None:
    registry.clear()
    settings.FORGE_METRICS_TOKEN = TOKEN
    settings.FORGE_GRAPHS = graphs
    try:
        response, anonymous = scraper().get("/readyz"), Client().get("/readyz")
    finally:
        registry.clear()
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["failed"] == ["graphs"] and body["checks"]["graphs"] == "failed"
    assert body["reason"].startswith("FORGE_GRAPHS") and len(body["reason"]) <= 200
    assert anonymous.status_code == 503 and anonymous.json() == {"status": "unavailable"}


@pytest.mark.django_db
@override_settings(FORGE_METRICS_TOKEN=TOKEN, FORGE_QUEUE="procrastinate")
def test_anonymous_callers_see_only_the_status_not_the_workers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health.status, "workers", lambda: WORKERS)
    anonymous = Client().get("/readyz")
    assert anonymous.status_code == 200 and anonymous.json() == {"status": "ok"}
    wrong = Client(HTTP_AUTHORIZATION="Bearer wrong").get("/readyz")
    assert wrong.json() == {"status": "ok"}
    assert scraper().get("/readyz").json()["workers"] == WORKERS


@pytest.mark.django_db
@override_settings(FORGE_QUEUE="procrastinate")
def test_a_staff_session_sees_the_workers_and_other_people_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health.status, "workers", lambda: WORKERS)
    staff = User.objects.create_user("ops", password="ops", is_staff=True)
    person = User.objects.create_user("someone", password="someone")
    assert logged_in(staff).get("/readyz").json()["workers"] == WORKERS
    assert logged_in(person).get("/readyz").json() == {"status": "ok"}
    # Without FORGE_METRICS_TOKEN set, no bearer token opens the details.
    assert Client(HTTP_AUTHORIZATION="Bearer ").get("/readyz").json() == {"status": "ok"}


@pytest.mark.redis
@pytest.mark.django_db
@override_settings(REDIS_URL="redis://127.0.0.1:6379/0", FORGE_METRICS_TOKEN=TOKEN)
def test_readyz_checks_redis_when_it_is_configured() -> None:
    response = scraper().get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "redis": "ok", "graphs": "ok"}


@pytest.mark.django_db
@override_settings(REDIS_URL=f"redis://{CLOSED}/0", FORGE_METRICS_TOKEN=TOKEN)
def test_readyz_is_503_naming_redis_when_redis_is_down() -> None:
    response = scraper().get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failed": ["redis"],
                               "checks": {"database": "ok", "redis": "failed",
                                          "graphs": "ok"}}


PROBE = """
import json, time, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION="Bearer probe-token")
begun = time.monotonic()
ready = client.get("/readyz")
waited = time.monotonic() - begun
alive = client.get("/healthz")
print(json.dumps({"ready": [ready.status_code, ready.json()], "waited": waited,
                  "alive": [alive.status_code, alive.json()]}))
"""


def test_readyz_is_503_naming_the_database_when_it_is_unreachable() -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
           "DJANGO_SETTINGS_MODULE": "forgeui.settings",
           "DATABASE_URL": f"postgres://postgres@{CLOSED}/forge", "REDIS_URL": f"redis://{CLOSED}/0",
           "FORGE_METRICS_TOKEN": "probe-token", "FORGE_DB_POOL_TIMEOUT": "40"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["alive"] == [200, {"status": "ok"}]  # liveness does not care
    assert found["ready"] == [503, {"status": "unavailable", "failed": ["database", "redis"],
                                    "checks": {"database": "failed", "redis": "failed",
                                               "graphs": "ok"}}]
    assert "readyz: database unreachable" in done.stderr  # why goes to the log
    # The probe asks the pool with its own timeout (2 s), not the requests' wait (40 s here).
    assert found["waited"] < 20
