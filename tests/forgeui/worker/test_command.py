"""``manage.py forge_worker`` refuses what it cannot serve, with a message."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings


def test_forge_worker_needs_the_postgresql_queue() -> None:
    with pytest.raises(CommandError, match="PostgreSQL"):
        call_command("forge_worker")


@override_settings(FORGE_QUEUE="procrastinate")
def test_forge_worker_refuses_no_slots() -> None:
    with pytest.raises(CommandError, match="1 or more"):
        call_command("forge_worker", "--concurrency", "0")


@override_settings(FORGE_QUEUE="procrastinate")
def test_forge_worker_refuses_more_threads_than_its_connection_pool(
        monkeypatch: pytest.MonkeyPatch) -> None:
    options = settings.DATABASES["default"].setdefault("OPTIONS", {})
    monkeypatch.setitem(options, "pool", {"min_size": 1, "max_size": 8, "timeout": 30})
    with pytest.raises(CommandError, match="--threads 8 needs 9 database connections; "
                                           "FORGE_DB_POOL allows 8"):
        call_command("forge_worker", "--threads", "8")
