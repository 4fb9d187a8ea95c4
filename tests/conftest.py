"""Shared test plumbing: which real services are up, what to do when one is not, and how
deep the property and load tests go.

Tests marked ``postgres`` or ``redis`` need those services on 127.0.0.1. When one is
missing they are skipped, except under ``CI=true``, where they fail loudly: CI must never
pass by skipping the tests that matter.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

if TYPE_CHECKING:
    from tests.e2e.conftest import Seed

SERVICES = ("postgres", "redis")
REDIS = ("127.0.0.1", 6379)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def deep() -> bool:
    """``make test-deep`` (``FORGE_DEEP=1``): many more generated examples, full loads."""
    return os.environ.get("FORGE_DEEP", "").lower() in {"1", "true", "yes"}


# Property tests take a quick sample in `make test` and hunt longer in `make test-deep`;
# `pytest --hypothesis-profile=deep` picks the long hunt for one run.
# No deadline: on a loaded machine one slow example is no bug, and the timeouts catch hangs.
hypothesis_settings.register_profile("quick", max_examples=30, deadline=None)
hypothesis_settings.register_profile("deep", max_examples=500, deadline=None)
hypothesis_settings.load_profile("deep" if deep() else "quick")


def address(name: str) -> tuple[str, int]:
    if name == "redis":
        return REDIS
    from django.conf import settings

    db = settings.DATABASES["postgres"]
    return db["HOST"], int(db["PORT"] or 5432)


@functools.cache
def service_up(name: str) -> bool:
    """Probe a service once per session, with a real protocol round trip."""
    host, port = address(name)
    try:
        if name == "postgres":
            import psycopg
            from django.conf import settings

            db = settings.DATABASES["postgres"]
            with psycopg.connect(host=host, port=port, user=db["USER"], dbname=db["NAME"],
                                 connect_timeout=2):
                return True
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep a down PostgreSQL out of the test-database setup, so only its tests suffer."""
    if not any(item.get_closest_marker("postgres") for item in items) or service_up("postgres"):
        return
    for item in items:
        if item.get_closest_marker("postgres") is None:
            continue
        marker = item.get_closest_marker("django_db")
        if marker is not None:
            kwargs = dict(marker.kwargs)
            kwargs["databases"] = [d for d in kwargs.get("databases", []) if d != "postgres"]
            item.add_marker(pytest.mark.django_db(*marker.args, **kwargs), append=False)


def require_service(name: str) -> None:
    """Skip (fail under ``CI=true``) unless ``name`` answers; for module-scoped fixtures,
    which run before the per-test check below."""
    if not service_up(name):
        missing("{} is not reachable on {}:{}".format(name, *address(name)))


def missing(message: str) -> None:
    if in_ci():
        pytest.fail(f"{message} (CI=true: required)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def _require_services(request: pytest.FixtureRequest) -> None:
    for name in SERVICES:
        if request.node.get_closest_marker(name):
            require_service(name)


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    """One migrated database with the demo users and their tokens per session (per xdist
    worker), copied for each live server (``tests.e2e.conftest.serve``) that needs one."""
    from tests.e2e.conftest import seed

    return seed(tmp_path_factory.mktemp("seed"))


@pytest.fixture
def close_worker_connections() -> Iterator[None]:
    """Close connections asgiref's shared worker thread opened, so test databases can drop.

    Store calls made from an event loop with no ``async_to_sync`` around it run their
    queries on ``SyncToAsync.single_thread_executor``; its connections outlive the test.
    """
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
