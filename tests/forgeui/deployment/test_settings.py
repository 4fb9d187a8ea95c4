"""Settings come from the environment, with embedded defaults."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.e2e.conftest import stop_process, wait_until_up
from tests.forgeui.conftest import ROOT
from tests.processes import free_port

PROBE = """
import json
from forgeui import settings as s
db = s.DATABASES["default"]
print(json.dumps({"engine": db["ENGINE"], "name": str(db["NAME"]),
                  "options": db.get("OPTIONS", {}), "layer": s.CHANNEL_LAYERS["default"],
                  "tasks": s.TASKS["default"]["BACKEND"], "graphs": s.FORGE_GRAPHS,
                  "debug": s.DEBUG, "hosts": s.ALLOWED_HOSTS, "apps": s.INSTALLED_APPS,
                  "conn_max_age": db.get("CONN_MAX_AGE", 0)}))
"""


def settings_with(**env: str) -> dict[str, Any]:
    clean = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env}
    done = subprocess.run([sys.executable, "-c", PROBE], env=clean, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_embedded_defaults() -> None:
    found = settings_with()
    assert found["engine"] == "django.db.backends.sqlite3"
    assert found["name"] == str(ROOT / "db.sqlite3")
    assert "journal_mode=WAL" in found["options"]["init_command"]
    assert found["options"]["timeout"] > 0
    assert found["conn_max_age"] is None  # kept open per thread
    assert found["layer"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert found["tasks"] == "forgeui.runs.backends.ThreadPoolBackend"
    assert found["graphs"]["transfer"] == "forgeui.demo.graphs:transfer"
    assert found["debug"] is True and "django_rq" not in found["apps"]


def test_production_services_from_the_environment() -> None:
    found = settings_with(
        DATABASE_URL="postgres://forge:pw@db.internal:5433/forge",
        REDIS_URL="redis://cache.internal:6379/2", DEBUG="false", SECRET_KEY="s" * 50,
        ALLOWED_HOSTS="forge.example.com, api.example.com",
        FORGE_GRAPHS='{"mine": "tests.forgeui.graphs:race"}',
    )
    assert found["engine"] == "django.db.backends.postgresql" and found["name"] == "forge"
    assert found["conn_max_age"] == 0
    # Bound by the server, so statements a connection runs often are prepared there.
    assert found["options"]["server_side_binding"] is True
    assert found["options"]["prepare_threshold"] > 0
    assert found["layer"]["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    [host] = found["layer"]["CONFIG"]["hosts"]
    assert host["address"] == "redis://cache.internal:6379/2"
    # Longer than the layer's blocking pop, or an idle socket's receive times out.
    assert host["socket_timeout"] > 5
    # Jobs queue in PostgreSQL, for forge_worker; RQ only when asked for.
    assert found["tasks"] == "forgeui.worker.backend.ProcrastinateBackend"
    assert "procrastinate.contrib.django" in found["apps"] and "django_rq" not in found["apps"]
    assert found["graphs"] == {"mine": "tests.forgeui.graphs:race"}
    assert found["debug"] is False
    assert found["hosts"] == ["forge.example.com", "api.example.com"]


def test_rq_serves_a_database_other_than_postgresql_or_when_asked_for() -> None:
    for env in ({"DATABASE_URL": "sqlite:///forge.sqlite3"}, {"FORGE_QUEUE": "rq"}):
        found = settings_with(REDIS_URL="redis://cache.internal:6379/2", **env)
        assert found["tasks"] == "django_tasks_rq.RQBackend", env
        assert "procrastinate.contrib.django" not in found["apps"]


def test_prepared_statements_can_be_turned_off_for_a_pooler() -> None:
    found = settings_with(DATABASE_URL="postgres://forge:pw@db.internal:5432/forge",
                          FORGE_PG_PREPARED="0")
    assert "server_side_binding" not in found["options"]
    assert "prepare_threshold" not in found["options"]


def test_setting_django_up_loads_no_web_server() -> None:
    """Workers, commands and shells set Django up without daphne's server or Twisted."""
    probe = ("import sys, django; django.setup(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('daphne', 'twisted', 'autobahn')))")
    clean = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
             "DJANGO_SETTINGS_MODULE": "forgeui.settings"}
    done = subprocess.run([sys.executable, "-c", probe], env=clean, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_runserver_serves_the_asgi_application_with_its_websockets(tmp_path: Path) -> None:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
           "DJANGO_SETTINGS_MODULE": "forgeui.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'forge.sqlite3'}"}
    with (tmp_path / "runserver.log").open("wb") as log:
        server = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload",
                                   f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=log,
                                  stderr=subprocess.STDOUT)
        try:
            wait_until_up(f"http://127.0.0.1:{port}", server, probe="/healthz",
                          name="runserver")
            # The inbox socket is routed (the consumer refuses an anonymous reader);
            # Django's own runserver, WSGI only, would answer 404.
            with pytest.raises(websockets.InvalidStatus) as refused:
                asyncio.run(open_socket(f"ws://127.0.0.1:{port}/ws/inbox/",
                                        f"http://127.0.0.1:{port}"))
            assert refused.value.response.status_code == 403
        finally:
            stop_process(server)
    assert "ASGI/Daphne" in (tmp_path / "runserver.log").read_text()


async def open_socket(url: str, origin: str) -> None:
    async with websockets.connect(url, origin=origin, open_timeout=30):  # type: ignore[arg-type]
        pass
