"""``manage.py forge_worker`` refuses what it cannot serve, with a message."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings


def test_forge_worker_needs_the_postgresql_queue() -> None:
    with pytest.raises(CommandError, match="PostgreSQL"):
        call_command("forge_worker")


@override_settings(FORGE_QUEUE="procrastinate")
def test_forge_worker_refuses_no_slots() -> None:
    with pytest.raises(CommandError, match="1 or more"):
        call_command("forge_worker", "--concurrency", "0")
