"""Login throttling (django-axes): per username and per address, on both login pages; a
lockout is audited, and an admin lifts it from /admin/, audited with their name."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import AuditEntry

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = settings.AXES_FAILURE_LIMIT


def attempt(username: str, password: str, ip: str = "10.0.0.1",
            path: str = "/accounts/login/") -> int:
    client = Client(REMOTE_ADDR=ip)
    response = client.post(path, {"username": username, "password": password})
    return response.status_code


def logged_in(status: int) -> bool:
    return status == 302


def test_a_username_is_locked_after_the_limit_even_with_the_right_password(
        users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    # The form again with its error, until the failure that reaches the limit.
    assert [attempt("reviewer", f"wrong-{n}", ip=f"10.0.1.{n}") for n in range(LIMIT)] == \
        [200] * (LIMIT - 1) + [429]
    assert attempt("reviewer", "right-one", ip="10.0.2.1") == 429
    page = Client(REMOTE_ADDR="10.0.2.2").post(
        "/accounts/login/", {"username": "reviewer", "password": "right-one"})
    assert "Too many failed logins" in page.content.decode()
    locked = AuditEntry.objects.filter(action="login.locked_out", object_id="reviewer")
    assert locked.exists() and locked.first().actor is None


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
        attempt("boss", f"wrong-{n}", ip=f"10.3.0.{n}", path="/admin/login/")
    assert attempt("boss", "boss-password", ip="10.3.1.1", path="/admin/login/") == 429


def test_a_success_resets_the_count(users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    for _ in range(2):
        for n in range(LIMIT - 1):
            assert attempt("reviewer", f"wrong-{n}", ip=f"10.4.0.{n}") == 200
        assert logged_in(attempt("reviewer", "right-one", ip="10.4.1.1"))


def test_an_admin_lifts_a_lockout_and_the_audit_log_says_who(users: dict[str, User]) -> None:
    users["reviewer"].set_password("right-one")
    users["reviewer"].save()
    for n in range(LIMIT):
        attempt("reviewer", f"wrong-{n}", ip=f"10.5.0.{n}")
    assert attempt("reviewer", "right-one", ip="10.5.1.1") == 429
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
    assert logged_in(attempt("reviewer", "right-one", ip="10.5.1.2"))
