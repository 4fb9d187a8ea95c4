"""Login throttling (django-axes): per username at an address and per address, on both
login pages; a lockout is audited once, and an admin lifts it from /admin/, audited with
their name."""

from __future__ import annotations

import subprocess
import sys

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings

from forgeui.models import AuditEntry
from tests.forgeui.conftest import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = settings.AXES_FAILURE_LIMIT


def attempt(username: str, password: str, ip: str = "10.0.0.1",
            path: str = "/accounts/login/") -> int:
    client = Client(REMOTE_ADDR=ip)
    response = client.post(path, {"username": username, "password": password})
    return response.status_code


def logged_in(status: int) -> bool:
    return status == 302


def test_a_username_is_locked_at_one_address_even_with_the_right_password(
        users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    # The form again with its error, until the failure that reaches the limit.
    assert [attempt("reviewer", f"wrong-{n}", ip="10.0.1.1") for n in range(LIMIT)] == \
        [200] * (LIMIT - 1) + [429]
    assert attempt("reviewer", "right-one", ip="10.0.1.1") == 429
    page = Client(REMOTE_ADDR="10.0.1.1").post(
        "/accounts/login/", {"username": "reviewer", "password": "right-one"})
    assert "Too many failed logins" in page.content.decode()
    locked = AuditEntry.objects.filter(action="login.locked_out", object_id="reviewer")
    assert locked.count() == 1 and locked.first().actor is None  # once, not per attempt
    assert locked.first().detail["ip_address"] == "10.0.1.1"
    # Elsewhere the reviewer logs in: a stranger's guesses cannot lock them out.
    assert logged_in(attempt("reviewer", "right-one", ip="10.0.2.1"))


def test_guesses_spread_over_addresses_lock_no_one_out(users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    for n in range(3 * LIMIT):
        assert attempt("reviewer", f"wrong-{n}", ip=f"10.0.3.{n}") == 200
    assert logged_in(attempt("reviewer", "right-one", ip="10.0.4.1"))


def test_an_address_is_locked_after_the_limit_whatever_the_usernames(
        users: dict[str, User]) -> None:
    users["auditor"].set_password("auditor-pw")
    users["auditor"].save()
    for n in range(LIMIT - 1):
        assert attempt(f"guess-{n}", "nope", ip="10.9.9.9") == 200
    assert attempt(f"guess-{LIMIT}", "nope", ip="10.9.9.9") == 429
    assert attempt("auditor", "auditor-pw", ip="10.9.9.9") == 429
    assert logged_in(attempt("auditor", "auditor-pw", ip="10.9.9.10"))


def test_the_admin_login_page_is_throttled_too(users: dict[str, User]) -> None:
    User.objects.create_superuser("boss", password="boss-password")
    for n in range(LIMIT):
        attempt("boss", f"wrong-{n}", ip="10.3.0.1", path="/admin/login/")
    assert attempt("boss", "boss-password", ip="10.3.0.1", path="/admin/login/") == 429


def test_a_success_resets_that_usernames_count_at_that_address(
        users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    for _ in range(2):
        for n in range(LIMIT - 1):
            assert attempt("reviewer", f"wrong-{n}", ip="10.4.0.1") == 200
        assert logged_in(attempt("reviewer", "right-one", ip="10.4.0.1"))


def test_logging_in_to_ones_own_account_keeps_the_guesses_at_others(
        users: dict[str, User]) -> None:
    """Guess at others, log in to one's own account between guesses: the address's
    count still reaches the limit."""
    users["supervisor"].set_password("mine")
    users["supervisor"].save()
    statuses = []
    for n in range(LIMIT):
        statuses.append(attempt(f"someone-{n}", "guess", ip="10.4.9.9"))
        if n < LIMIT - 1:
            assert logged_in(attempt("supervisor", "mine", ip="10.4.9.9"))
    assert statuses == [200] * (LIMIT - 1) + [429]


def test_a_lockout_row_holds_no_username_that_names_no_account(
        users: dict[str, User]) -> None:
    """Strangers choose the usernames they try; the audit log keeps none that is not an
    account's, and one row per locked-out address, however many names follow."""
    for n in range(3 * LIMIT):
        attempt(f"=HYPERLINK(\"http://evil/{n}\")", "guess", ip="10.4.8.8")
    locked = AuditEntry.objects.filter(action="login.locked_out")
    assert [(e.object_id, e.detail) for e in locked] == [
        ("", {"ip_address": "10.4.8.8", "known_user": False})]


def test_an_admin_lifts_a_lockout_and_the_audit_log_says_who(users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    for n in range(LIMIT):
        attempt("reviewer", f"wrong-{n}", ip="10.5.0.1")
    assert attempt("reviewer", "right-one", ip="10.5.0.1") == 429
    boss = User.objects.create_superuser("boss", password="boss-password")
    admin = Client()
    admin.force_login(boss)
    ids = list(AccessAttempt.objects.filter(username="reviewer").values_list("pk", flat=True))
    assert ids
    response = admin.post("/admin/axes/accessattempt/", {
        "action": "delete_selected", "_selected_action": ids, "post": "yes"})
    assert response.status_code == 302
    assert not AccessAttempt.objects.filter(username="reviewer").exists()
    lifted = AuditEntry.objects.filter(action="login.unlocked", object_id="reviewer")
    assert lifted.count() == len(ids) and {e.actor for e in lifted} == {boss}
    assert logged_in(attempt("reviewer", "right-one", ip="10.5.0.1"))
    for n in range(LIMIT):  # locked out again: a new lockout, with a row of its own
        attempt("reviewer", f"wrong-{n}", ip="10.5.0.1")
    assert AuditEntry.objects.filter(action="login.locked_out", object_id="reviewer").count() == 2


def production_trusted_proxies() -> int:
    """``FORGE_TRUSTED_PROXIES`` as docs/production.md's settings leave it."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "DEBUG": "0",
           "SECRET_KEY": "s" * 50, "ALLOWED_HOSTS": "forge.example.com"}
    done = subprocess.run(
        [sys.executable, "-c", "from forgeui import settings as s; print(s.FORGE_TRUSTED_PROXIES)"],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return int(done.stdout)


def via_the_proxy(username: str, password: str, client_ip: str, written: str = "") -> int:
    """A login through docs/production.md's layout: one TLS proxy appends the client's
    address to ``X-Forwarded-For``, and ``daphne --proxy-headers`` puts the header's first
    entry in ``REMOTE_ADDR``. ``written`` is a header the client sent itself."""
    forwarded = f"{written}, {client_ip}" if written else client_ip
    client = Client(REMOTE_ADDR=forwarded.split(",")[0].strip(),
                    HTTP_X_FORWARDED_FOR=forwarded)
    response = client.post("/accounts/login/", {"username": username, "password": password})
    return response.status_code


def test_behind_the_documented_proxy_each_client_is_counted_apart(
        users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    with override_settings(FORGE_TRUSTED_PROXIES=production_trusted_proxies()):
        statuses = [via_the_proxy(f"guess-{n}", "nope", "203.0.113.5") for n in range(LIMIT)]
        assert statuses == [200] * (LIMIT - 1) + [429]
        # Another client behind the same proxy signs in: the guesser's count is not theirs.
        assert logged_in(via_the_proxy("reviewer", "right-one", "198.51.100.7"))
        # The guesser cannot leave its count by writing a header of its own.
        assert via_the_proxy("reviewer", "right-one", "203.0.113.5", written="192.0.2.1") == 429
        locked = AuditEntry.objects.filter(action="login.locked_out")
        assert {entry.detail["ip_address"] for entry in locked} == {"203.0.113.5"}
