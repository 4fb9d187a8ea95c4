"""Test settings: the real settings plus explicit SQLite and PostgreSQL aliases.

Both database aliases exist in one run, so the store conformance suite and the race tests
run against SQLite and PostgreSQL in a single ``pytest``. Tasks run immediately (in the
thread that commits), which keeps tests deterministic; the thread-pool and RQ backends get
tests of their own.
"""

import atexit
import os
import shutil
import tempfile

from forgeui.settings import *  # noqa: F403
from forgeui.settings import DATABASES, database

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
# A directory per test session, gone at exit with any WAL files a test left behind.
SQLITE_DIR = tempfile.mkdtemp(prefix="forge-test-")
atexit.register(shutil.rmtree, SQLITE_DIR, ignore_errors=True)

DATABASES["sqlite"] = database(f"sqlite:///{SQLITE_DIR}/sqlite-alias.sqlite3")
DATABASES["postgres"] = database(POSTGRES_URL)
for alias in DATABASES:
    # The extra aliases are set up only by the tests that use them, without "default".
    DATABASES[alias]["TEST"] = {"DEPENDENCIES": []} if alias != "default" else {}
    if DATABASES[alias]["ENGINE"].endswith("sqlite3"):
        # A file, not Django's shared in-memory database: worker threads and
        # subprocesses must see what the test committed.
        DATABASES[alias]["TEST"]["NAME"] = os.path.join(SQLITE_DIR, f"test-{alias}.sqlite3")
        # A throwaway file needs no fsync per commit (each transactional test's flush is
        # dozens of commits); WAL stays, so readers still run beside the writer.
        DATABASES[alias]["OPTIONS"]["init_command"] = (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF")
    elif alias == "postgres":
        # Per session: two test runs on one server must not drop each other's database.
        DATABASES[alias]["TEST"]["NAME"] = f"test_forge_{os.getpid()}"
if DATABASES["default"]["ENGINE"] == DATABASES["postgres"]["ENGINE"]:
    DATABASES["postgres"]["TEST"] = {"MIRROR": "default"}

TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
         "notify": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
FORGE_WEBHOOK_BACKOFF = [0, 0, 0]  # retries without waiting
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
FORGE_GRAPHS = {
    **FORGE_GRAPHS,  # noqa: F405
    "race": "tests.forgeui.graphs:race",
    "gated": "tests.forgeui.graphs:gated",
    "gated_team": "tests.forgeui.graphs:gated_team",
    "parallel": "tests.forgeui.graphs:parallel",
    "blocking": "tests.forgeui.graphs:blocking",
    "pipeline": "tests.forgeui.graphs:make_pipeline",
    "custom": "tests.forgeui.graphs:custom",
    "flaky": "tests.forgeui.graphs:flaky",
    "guarded": "tests.forgeui.graphs:guarded",
    "payment": "tests.forgeui.graphs:payment",
    "signoffs": "tests.forgeui.graphs:signoffs",
    # LangGraph graphs, registered the three ways a team may: builder, compiled, factory.
    "lg_two": "tests.forgeui.langgraph.team_graphs:two_interrupts",
    "lg_parallel": "tests.forgeui.langgraph.team_graphs:compiled_parallel",
    "lg_subgraph": "tests.forgeui.langgraph.team_graphs:subgraph",
    "lg_breakpoint": "tests.forgeui.langgraph.team_graphs:breakpoint_compiled",
    "lg_inbox": "tests.forgeui.langgraph.team_graphs:agent_inbox",
    "lg_middleware": "tests.forgeui.langgraph.team_graphs:middleware",
    "lg_chat": "tests.forgeui.langgraph.team_graphs:chat",
    "lg_deadline": "tests.forgeui.langgraph.team_graphs:with_deadline",
    "signoff": "tests.forgeui.graphs:signoff",
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast user creation
