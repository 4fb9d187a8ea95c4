"""A live forge for the browser tests: daphne on a free port, a SQLite file, demo users.

The server runs the embedded settings (``forgeui.settings``: in-memory channel layer and
in-process tasks, both fine since daphne is one process) in a subprocess, as ``make run``
does but with a fast password hash (``tests.live_settings``), so the browser meets the
real ASGI stack: origin checks, sessions, the websocket consumer and the task pool.
Chromium is Debian's ``/usr/bin/chromium``; when it is missing the tests are skipped,
except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forgeui.demo.graphs import GRAPHS
from tests.conftest import missing
from tests.processes import free_port, manage

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PASSWORDS = {"reviewer": "forge-reviewer", "supervisor": "forge-supervisor",
             "auditor": "forge-auditor", "admin": "forge-admin"}
# The two sizes every page must work at: a laptop and a phone.
SIZES = [{"width": 1440, "height": 900}, {"width": 390, "height": 844}]
# The site's approval policies: two of three named people sign off a signoff run.
POLICIES = {"four-eyes": {"nodes": ["signoff/sign"], "approvals": 2,
                          "users": ["reviewer", "supervisor", "admin"]}}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@dataclass
class LiveServer:
    url: str
    env: dict[str, str]
    tokens: dict[str, str]

    def api(self, method: str, path: str, body: Any = None, who: str = "supervisor") -> Any:
        """Call the JSON API with a bearer token (how scripts start runs)."""
        request = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.tokens[who]}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from None

    def start(self, graph: str, data: Any = None) -> list[dict[str, Any]]:
        """Start a run; its pending interrupts once the run has paused."""
        started = self.api("POST", "/api/runs", {"graph": graph, "input": data or {}})
        return self.pending(started["thread_id"], at_least=1)

    def pending(self, root_thread_id: str, at_least: int = 0,
                timeout: float = 30) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.api("GET", f"/api/interrupts?status=pending&root_thread_id="
                                    f"{root_thread_id}&limit=200")["items"]
            if len(found) >= at_least or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


def manage_all(env: dict[str, str], *commands: tuple[str, ...]) -> list[str]:
    """Several ``manage.py`` commands in one process, so Django starts once; each one's
    output, in order."""
    script = ("import io, json\n"
              "from django.core.management import call_command\n"
              "outs = []\n"
              f"for args in json.loads({json.dumps(json.dumps(commands))}):\n"
              "    out = io.StringIO()\n"
              "    call_command(*args, stdout=out)\n"
              "    outs.append(out.getvalue())\n"
              "print(json.dumps(outs))\n")
    done = manage("shell", "-c", script, env=env)
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def wait_until_up(url: str, server: subprocess.Popen[bytes], timeout: float = 60,
                  probe: str = "/api/health", name: str = "daphne") -> None:
    """Wait until ``url + probe`` answers; fail at once if ``server`` (``name``) exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"{name} exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url + probe, timeout=2):
                return
        except (OSError, urllib.error.URLError):
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not come up")


@dataclass(frozen=True)
class Seed:
    """A migrated forge database holding the demo users and an API token for each."""

    database: Path
    tokens: dict[str, str]


def server_env(folder: Path, **extra_env: str) -> dict[str, str]:
    """The environment of a forge serving the SQLite file in ``folder``, as ``make run``."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="tests.live_settings", PYTHONPATH=str(ROOT),
               DATABASE_URL=f"sqlite:///{folder / 'forge.sqlite3'}", DEBUG="1",
               ALLOWED_HOSTS="127.0.0.1,localhost", PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING",
               # The demo graphs, one that pauses with whatever payload its input holds, and
               # ones that stay running or fail while a file the test controls says so.
               FORGE_GRAPHS=json.dumps({**GRAPHS, "custom": "tests.forgeui.graphs:custom",
                                        "chat": "tests.forgeui.graphs:chat",
                                        "blocking": "tests.forgeui.graphs:blocking",
                                        "flaky": "tests.forgeui.graphs:flaky",
                                        "guarded": "tests.forgeui.graphs:guarded",
                                        # LangGraph graphs, as a team registers them.
                                        "lg_two": "tests.forgeui.langgraph.team_graphs:"
                                                  "two_interrupts",
                                        "lg_middleware": "tests.forgeui.langgraph.team_graphs:"
                                                         "middleware",
                                        "signoff": "tests.forgeui.graphs:signoff"}),
               FORGE_POLICIES=json.dumps(POLICIES))
    env.update(extra_env)
    return env


def seed(folder: Path, **extra_env: str) -> Seed:
    """Migrate a fresh database in ``folder`` and add the demo users and their tokens."""
    env = server_env(folder, **extra_env)
    _, _, *made = manage_all(env, ("migrate", "--verbosity", "0"), ("demo", "--no-runs"),
                             *(("create_token", name) for name in PASSWORDS))
    tokens = {name: token.strip() for name, token in zip(PASSWORDS, made, strict=True)}
    return Seed(folder / "forge.sqlite3", tokens)


def copy_database(source: Path, target: Path) -> None:
    """Copy a SQLite database through SQLite itself, so nothing left in a WAL is lost."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


@contextmanager
def serve(folder: Path, seeded: Seed | None = None, proxy_headers: bool = False,
          **extra_env: str) -> Iterator[LiveServer]:
    """A fresh forge (database, demo users, API tokens) under daphne on a free port.

    With ``seeded`` the database starts as a copy of that one, which skips the migrations
    and the accounts: what each module's server costs is then daphne's start alone.
    ``proxy_headers`` runs daphne as production behind a proxy does (``--proxy-headers``).
    """
    port = free_port()
    env = server_env(folder, **extra_env)
    if seeded is None:
        seeded = seed(folder, **extra_env)
    else:
        copy_database(seeded.database, folder / "forge.sqlite3")
    with (folder / "daphne.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", *(["--proxy-headers"] if proxy_headers else []),
             "-b", "127.0.0.1", "-p", str(port), "forgeui.asgi:application"],
            cwd=ROOT, env=env, stdout=log,
            stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(url, server)
            yield LiveServer(url, env, seeded.tokens)
        finally:
            stop_process(server)


def stop_process(process: subprocess.Popen[bytes], grace: float = 10) -> None:
    """SIGTERM, and SIGKILL after ``grace`` seconds if it is still there."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# A server per module keeps each module's runs and claims to itself.
@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[LiveServer]:
    with serve(tmp_path_factory.mktemp("live"), seeded) as server:
        yield server


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


# One browser for the browser tests a worker runs in a row (each test opens contexts of its
# own), stopped before the worker goes on to other tests: the sync Playwright API keeps an
# event loop running in this thread until it stops, and asyncio tests could not start under
# it. Package scope ends exactly there.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        missing(f"Chromium is not installed at {CHROMIUM}")
    from playwright.sync_api import expect, sync_playwright

    # expect()'s own default (5 s) is far below the contexts' on a loaded machine.
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


def log_in(browser: Any, server: LiveServer, who: str, path: str = "/",
           live: bool = True, viewport: dict[str, int] | None = None,
           bypass_csp: bool = False) -> Any:
    """A fresh browser context (its own cookies), logged in as ``who``, at ``path``.
    ``bypass_csp`` lets axe's script tag in (``test_accessibility.check``)."""
    context = browser.new_context(viewport=viewport or SIZES[0], bypass_csp=bypass_csp)
    context.set_default_timeout(20_000)  # a loaded machine is slow, not broken
    page = context.new_page()
    page.goto(f"{server.url}/accounts/login/?next={path}")
    page.fill("#id_username", who)
    page.fill("#id_password", PASSWORDS[who])
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}{path}")
    if live:
        page.wait_for_selector("#live-status[data-state=on]")
    return page


Login = Callable[..., Any]


@pytest.fixture(params=SIZES, ids=["1440x900", "390x844"])
def size(request: pytest.FixtureRequest) -> dict[str, int]:
    """Each test that takes it runs at both sizes every page must work at."""
    return dict(request.param)


@pytest.fixture
def sized_reviewer(browser: Any, forge: LiveServer, size: dict[str, int]) -> Iterator[Any]:
    """The reviewer logged in at ``size``, on the inbox, ready for ``check``."""
    page = log_in(browser, forge, "reviewer", live=False, viewport=size, bypass_csp=True)
    yield page
    page.context.close()


@pytest.fixture
def login(browser: Any, forge: LiveServer) -> Iterator[Login]:
    """``login("reviewer")``: a page in a browser context of its own, logged in."""
    pages: list[Any] = []

    def open_as(who: str, path: str = "/", live: bool = True) -> Any:
        pages.append(log_in(browser, forge, who, path, live))
        return pages[-1]

    yield open_as
    for page in pages:
        page.context.close()
