"""Login throttling under ``daphne --proxy-headers``, as production runs it: a client that
writes its own ``X-Forwarded-For`` gains no fresh guesses, and a stranger's wrong
passwords lock out only the stranger, never the person at their own address."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import PASSWORDS, Seed, serve

pytestmark = pytest.mark.slow
LIMIT = 5  # FORGE_LOGIN_FAILURE_LIMIT's default, which the servers here run with
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
PROXY = "203.0.113.1"  # what a trusted proxy appends: the address it was called from


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[str]:
    """A forge told it sits behind one proxy, under ``daphne --proxy-headers``."""
    with serve(tmp_path_factory.mktemp("one-proxy"), seeded, proxy_headers=True,
               FORGE_LOGIN_FAILURE_LIMIT=str(LIMIT), FORGE_TRUSTED_PROXIES="1") as live:
        yield live.url


@pytest.fixture(scope="module")
def no_proxy(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[str]:
    """A forge with the default, no proxy trusted, under ``daphne --proxy-headers``."""
    with serve(tmp_path_factory.mktemp("no-proxy"), seeded, proxy_headers=True,
               FORGE_LOGIN_FAILURE_LIMIT=str(LIMIT)) as live:
        yield live.url


def log_in(url: str, username: str, password: str, forwarded: str | None = None) -> int:
    """One login through the form (its CSRF token first), from a fresh browser."""
    headers = {} if forwarded is None else {"X-Forwarded-For": forwarded}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        form = client.get("/accounts/login/")
        token = CSRF.search(form.text)
        assert token is not None, form.text[:500]
        return client.post("/accounts/login/", data={
            "username": username, "password": password,
            "csrfmiddlewaretoken": token.group(1)}).status_code


def test_a_rotated_forwarded_for_behind_a_trusted_proxy_gains_no_guesses(
        behind_proxy: str) -> None:
    """The client writes a new address each time; the proxy appends the real one."""
    statuses = [log_in(behind_proxy, f"guess-{n}", "wrong",
                       forwarded=f"198.51.100.{n}, {PROXY}7") for n in range(LIMIT + 3)]
    assert statuses == [200] * (LIMIT - 1) + [429] * 4
    # Someone else behind the same proxy is another address, and logs in.
    assert log_in(behind_proxy, "auditor", PASSWORDS["auditor"],
                  forwarded=f"198.51.100.1, {PROXY}8") == 302


def test_a_rotated_forwarded_for_with_no_trusted_proxy_gains_no_guesses(
        no_proxy: str) -> None:
    statuses = [log_in(no_proxy, f"guess-{n}", "wrong", forwarded=f"198.51.100.{n}")
                for n in range(LIMIT + 3)]
    assert statuses == [200] * (LIMIT - 1) + [429] * 4
    # A client that sends no such header is judged by its own address, and logs in.
    assert log_in(no_proxy, "auditor", PASSWORDS["auditor"]) == 302


def test_a_strangers_wrong_passwords_do_not_lock_the_person_out(behind_proxy: str) -> None:
    stranger, victim = f"{PROXY}66", f"{PROXY}77"
    statuses = [log_in(behind_proxy, "reviewer", f"wrong-{n}", forwarded=stranger)
                for n in range(LIMIT)]
    assert statuses == [200] * (LIMIT - 1) + [429]
    # The stranger stays locked out, even with the right password...
    assert log_in(behind_proxy, "reviewer", PASSWORDS["reviewer"], forwarded=stranger) == 429
    # ...while the reviewer, from their own address, logs in.
    assert log_in(behind_proxy, "reviewer", PASSWORDS["reviewer"], forwarded=victim) == 302
