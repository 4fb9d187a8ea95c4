"""Fixtures and helpers for forgeui tests: users in roles, the API and a logged-in
browser as them, a ledger file, subprocess environments."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from forgeui.store import DjangoCheckpointStore
from tests.forgeui.apiclient import Api

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def users(transactional_db: None) -> dict[str, User]:
    """One user per role, plus ``nobody`` (no role).

    Transactional tests flush the tables, the role groups of migration 0002 included.
    Each holds their role from before the test: the join rows are written as they are,
    without the membership entries a change of roles adds to the audit log.
    """
    made = {}
    for name in ("reviewer", "supervisor", "auditor", "nobody"):
        user = User.objects.create_user(name, password=name)
        if name != "nobody":
            held_already(user, name)
        made[name] = user
    return made


def held_already(user: User, *groups: str) -> None:
    """``user`` in ``groups``, as if always: no membership audit entry is written."""
    User.groups.through.objects.bulk_create([
        User.groups.through(user=user, group=Group.objects.get_or_create(name=name)[0])
        for name in groups])


@pytest.fixture
def api(users: dict[str, User]) -> Api:
    """The JSON API, called as any of ``users`` (or ``admin``) with a real bearer token."""
    return Api(users)


def logged_in(user: User) -> Client:
    """A browser-like client with ``user``'s session."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.txt"


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def database_url(alias: str) -> str:
    """A URL for the *test* database behind ``alias`` (it exists once the test runs)."""
    db = settings.DATABASES[alias]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    port = db.get("PORT") or 5432
    return f"postgres://{db['USER']}@{db['HOST']}:{port}/{db['NAME']}"


def django_env(database: str, redis_url: str = "", **extra: str) -> dict[str, str]:
    """The environment of a forge process on ``database`` (production settings module)."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="forgeui.settings", DATABASE_URL=database,
               FORGE_GRAPHS=json.dumps(settings.FORGE_GRAPHS), PYTHONPATH=str(ROOT),
               PYTHONUNBUFFERED="1", **extra)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads a sync caller needed an event loop from, one entry each time."""
    seen: list[str] = []
    real = DjangoCheckpointStore.run_from_sync

    def counted(self: DjangoCheckpointStore, coro: Coroutine[Any, Any, Any]) -> Any:
        seen.append(threading.current_thread().name)
        return real(self, coro)

    monkeypatch.setattr(DjangoCheckpointStore, "run_from_sync", counted)
    return seen


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each time a checkpoint is rebuilt from its thread's records, by primitive."""
    seen: list[str] = []
    for name in ("read_lineage", "read_thread"):
        real = getattr(DjangoCheckpointStore, name)

        def counted(self: Any, *args: Any, _real: Any = real, _name: str = name,
                    **kwargs: Any) -> Any:
            seen.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(DjangoCheckpointStore, name, counted)
    return seen
