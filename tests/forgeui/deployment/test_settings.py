"""Settings come from the environment, with embedded defaults."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.forgeui.conftest import ROOT

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
    assert found["tasks"] == "django_tasks_rq.RQBackend"
    assert {"django_rq", "django_tasks_rq"} <= set(found["apps"])
    assert found["graphs"] == {"mine": "tests.forgeui.graphs:race"}
    assert found["debug"] is False
    assert found["hosts"] == ["forge.example.com", "api.example.com"]


def test_prepared_statements_can_be_turned_off_for_a_pooler() -> None:
    found = settings_with(DATABASE_URL="postgres://forge:pw@db.internal:5432/forge",
                          FORGE_PG_PREPARED="0")
    assert "server_side_binding" not in found["options"]
    assert "prepare_threshold" not in found["options"]
