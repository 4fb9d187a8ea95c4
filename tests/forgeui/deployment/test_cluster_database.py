"""The cluster's seeded template: copies hold the demo users and the recorded tokens, and
templates that are half-built or old are dropped while a young one of other contents
(another checkout's) is kept."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import psycopg
import pytest

from tests.forgeui.cluster import environment
from tests.forgeui.cluster_database import (
    TEMPLATE_MAX_AGE,
    TEMPLATE_PREFIX,
    Database,
    create_seeded,
)

pytestmark = [pytest.mark.postgres]


def templates(db: Database) -> set[str]:
    with psycopg.connect(dbname="postgres", autocommit=True, **db.server) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                            (TEMPLATE_PREFIX + "test_%",)).fetchall()
    return {name for (name,) in rows}


def fake_template(name: str, comment: dict[str, object] | None) -> Database:
    fake = Database(TEMPLATE_PREFIX + name)
    fake.create()
    if comment is not None:
        fake.admin(f"COMMENT ON DATABASE \"{fake.name}\" IS '{json.dumps(comment)}'")
    return fake


@pytest.fixture
def copies() -> Iterator[list[Database]]:
    made = [Database(), Database()]
    yield made
    for db in made:
        db.drop()


def test_copies_hold_the_seed_and_only_unusable_templates_are_dropped(
        copies: list[Database]) -> None:
    half_built = fake_template("test_half", None)
    old = fake_template("test_old", {"tokens": {"x": "y"},
                                     "built": time.time() - TEMPLATE_MAX_AGE - 1})
    young = fake_template("test_young", {"tokens": {"x": "y"}, "built": time.time()})
    try:
        made = [create_seeded(db, environment(db.url, "redis://127.0.0.1:6379/0"))
                for db in copies]
        assert templates(copies[0]) == {young.name}
    finally:
        for fake in (half_built, old, young):
            fake.drop()
    assert made[0]["tokens"] == made[1]["tokens"] and set(made[0]["tokens"]) == {
        "supervisor", "reviewer"}
    for db in copies:
        users = {name for (name,) in db.rows("SELECT username FROM auth_user")}
        assert {"reviewer", "supervisor", "auditor"} <= users
        assert db.value("SELECT count(*) FROM django_session") == 1
