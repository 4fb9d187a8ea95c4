"""The cluster's PostgreSQL database, copied from a template migrated and seeded once.

Migrating, collecting the static files, adding the demo users and logging one in take a
Django process several seconds, and every cluster the suite and the benches start needs
the same result. The first cluster to need it builds it as a template database named by
a hash of what decides its contents; every cluster then copies that template with
``CREATE DATABASE ... TEMPLATE``, a file copy on the server. The set-up's output (the API
tokens and the session cookie, which live in the copied rows) is kept in the template's
comment. Nothing here imports Django.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from tests.processes import ROOT, manage

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
TEMPLATE_PREFIX = "forge_cluster_tpl_"
# Templates of other contents (another checkout, an older commit) are dropped at this age,
# well inside the two weeks a template's session cookie stays valid.
TEMPLATE_MAX_AGE = 24 * 3600
# One key for every process that builds or drops templates on this server.
TEMPLATE_LOCK = 0x666F726765  # "forge"

# migrate, the static files (DEBUG=0 serves collected ones), the demo users, their API
# tokens and a reviewer session, in one process: Django starts once, not once per command.
SETUP = """
import io, json
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
call_command("migrate", interactive=False, verbosity=0)
call_command("collectstatic", interactive=False, verbosity=0)
call_command("demo", "--no-runs", "--force", stdout=io.StringIO())
tokens = {}
for who in ("supervisor", "reviewer"):
    out = io.StringIO()
    call_command("create_token", who, stdout=out)
    tokens[who] = out.getvalue().strip()
session = Client()
session.force_login(User.objects.get(username="reviewer"))
print(json.dumps({"tokens": tokens,
                  "cookie": session.cookies[settings.SESSION_COOKIE_NAME].value}))
"""


class Database:
    """A fresh PostgreSQL database on the server of ``TEST_POSTGRES_URL``."""

    def __init__(self, name: str = "") -> None:
        parts = urlsplit(POSTGRES_URL)
        self.server = {"host": parts.hostname or "127.0.0.1", "port": parts.port or 5432,
                       "user": parts.username or "postgres", "password": parts.password}
        self.name = name or f"forge_cluster_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self._local = threading.local()
        self._opened: list[psycopg.Connection[Any]] = []

    @property
    def url(self) -> str:
        s = self.server
        auth = s["user"] + (f":{s['password']}" if s["password"] else "")
        return f"postgres://{auth}@{s['host']}:{s['port']}/{self.name}"

    def admin(self, sql: str) -> None:
        with psycopg.connect(dbname="postgres", autocommit=True, **self.server) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create(self, template: str = "") -> None:
        """Create the database empty, or as a copy of ``template``."""
        copy = f' TEMPLATE "{template}"' if template else ""
        self.admin(f'CREATE DATABASE "{self.name}"{copy}')

    def drop(self) -> None:
        self.close_connections()
        self.admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def close_connections(self) -> None:
        """Close every connection ``rows`` opened; the next call opens a fresh one.

        Called after each test, so a test stopped mid-query (a timeout) cannot hand the
        next one a connection that is still busy with its query.
        """
        opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run one query on this thread's autocommit connection; its rows."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and \
                conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.close()  # an earlier query was interrupted: its answer never came
        if conn is None or conn.closed:
            conn = self._local.conn = psycopg.connect(dbname=self.name, autocommit=True,
                                                      **self.server)
            self._opened.append(conn)
        return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def value(self, sql: str, *params: Any) -> Any:
        return self.rows(sql, *params)[0][0]


@functools.cache
def contents_key() -> str:
    """A hash of what decides the template's contents: the app's code (its migrations,
    the demo), the static files, the pinned dependencies and the set-up script."""
    digest = hashlib.sha256(SETUP.encode())
    files = [*sorted((ROOT / "forgeui").rglob("*.py")), *sorted((ROOT / "static").rglob("*")),
             ROOT / "constraints.txt"]
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def static_root() -> Path:
    """The collected static files the template's set-up made, shared like the template."""
    return Path(tempfile.gettempdir()) / f"forge-cluster-static-{contents_key()}"


@contextlib.contextmanager
def template_lock(db: Database) -> Iterator[psycopg.Connection[Any]]:
    """The server-wide lock under which templates are built and dropped: pytest workers
    and bench runs start clusters side by side."""
    with psycopg.connect(dbname="postgres", autocommit=True, **db.server) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (TEMPLATE_LOCK,))
        yield conn


def built(conn: psycopg.Connection[Any]) -> dict[str, dict[str, Any]]:
    """Every template on the server with its comment (``{}`` while one is half-built)."""
    rows = conn.execute("SELECT datname, shobj_description(oid, 'pg_database') FROM "
                        "pg_database WHERE datname LIKE %s", (TEMPLATE_PREFIX + "%",))
    return {name: json.loads(comment or "{}") for name, comment in rows.fetchall()}


def build(template: Database, env: dict[str, str]) -> dict[str, Any]:
    """Create ``template``, run the set-up against it, record the set-up's output."""
    template.create()
    shutil.rmtree(static_root(), ignore_errors=True)
    out = manage("shell", "-c", SETUP, env={**env, "DATABASE_URL": template.url,
                                             "STATIC_ROOT": str(static_root())}).stdout
    made: dict[str, Any] = {**json.loads(out.strip().splitlines()[-1]), "built": time.time()}
    quoted = json.dumps(made).replace("'", "''")
    template.admin(f"COMMENT ON DATABASE \"{template.name}\" IS '{quoted}'")
    return made


def create_seeded(db: Database, env: dict[str, str]) -> dict[str, Any]:
    """Create ``db`` as a copy of the seeded template, building the template first if no
    current one exists; the set-up's output (``tokens``, ``cookie``)."""
    template, made = Database(TEMPLATE_PREFIX + contents_key()), {}
    with template_lock(db) as conn:
        for name, found in built(conn).items():
            fresh = bool(found.get("tokens")) and time.time() - found["built"] < TEMPLATE_MAX_AGE
            if name == template.name and fresh and static_root().is_dir():
                made = found
            elif not fresh or name == template.name:
                Database(name).drop()  # half-built (its builder died), old, or unusable
        if not made:
            made = build(template, env)
        # Under the lock: no template is dropped while it is being copied.
        db.create(template=template.name)
    return made
