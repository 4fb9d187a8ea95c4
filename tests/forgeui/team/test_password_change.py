"""Changing a password: wrong old passwords count as failed logins, and a change revokes
the user's API tokens however it was made."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = settings.AXES_FAILURE_LIMIT


def change(client: Client, old: str, new: str = "a-new-password-1") -> int:
    return client.post("/accounts/password_change/", {
        "old_password": old, "new_password1": new, "new_password2": new}).status_code


def test_wrong_old_passwords_are_throttled_like_logins(users: dict[str, User]) -> None:
    client = Client(REMOTE_ADDR="10.8.0.1")
    client.force_login(users["reviewer"])
    assert [change(client, f"wrong-{n}") for n in range(LIMIT)] == [200] * (LIMIT - 1) + [429]
    assert change(client, "reviewer") == 429  # the right one too, while locked out
    users["reviewer"].refresh_from_db()
    assert users["reviewer"].check_password("reviewer")
    # And the login form at that address is locked for that username as well.
    assert Client(REMOTE_ADDR="10.8.0.1").post("/accounts/login/", {
        "username": "reviewer", "password": "reviewer"}).status_code == 429


def test_the_admins_password_change_is_the_throttled_one(users: dict[str, User]) -> None:
    boss = User.objects.create_superuser("boss", password="boss-password")
    client = Client(REMOTE_ADDR="10.8.0.3")
    client.force_login(boss)
    for method in (client.get, client.post):
        response = method("/admin/password_change/")
        assert response.status_code == 302
        assert response["Location"] == "/accounts/password_change/"
    assert "Changing your password revokes" in client.get(
        "/accounts/password_change/").content.decode()


def test_the_right_old_password_changes_it(users: dict[str, User]) -> None:
    client = Client(REMOTE_ADDR="10.8.0.2")
    client.force_login(users["reviewer"])
    assert change(client, "wrong") == 200
    response = client.post("/accounts/password_change/", {
        "old_password": "reviewer", "new_password1": "a-new-password-1",
        "new_password2": "a-new-password-1"})
    assert response.status_code == 302 and response["Location"].endswith("/done/")
    users["reviewer"].refresh_from_db()
    assert users["reviewer"].check_password("a-new-password-1")


def test_a_password_change_revokes_the_users_tokens(users: dict[str, User]) -> None:
    mine, _ = ApiToken.objects.issue(users["reviewer"], name="laptop")
    theirs, _ = ApiToken.objects.issue(users["auditor"], name="script")
    client = Client()
    client.force_login(users["reviewer"])
    assert change(client, "reviewer") == 302
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.revoked_at is not None and mine.state == "revoked"
    assert theirs.revoked_at is None


def test_a_password_set_elsewhere_revokes_them_too(users: dict[str, User]) -> None:
    """As the admin's form, a reset link and ``changepassword`` set it."""
    token, _ = ApiToken.objects.issue(users["auditor"])
    user = User.objects.get(pk=users["auditor"].pk)
    user.set_password("x-y-z-1-2-3")
    user.save()
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_a_hash_upgrade_on_login_is_no_change(users: dict[str, User], settings: Any) -> None:
    """Django rehashes a password whose hasher is out of date when it is checked."""
    token, _ = ApiToken.objects.issue(users["auditor"])
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher",
                                 "django.contrib.auth.hashers.MD5PasswordHasher"]
    assert Client().post("/accounts/login/", {"username": "auditor",
                                              "password": "auditor"}).status_code == 302
    users["auditor"].refresh_from_db()
    assert users["auditor"].password.startswith("pbkdf2_sha256$")  # it was upgraded
    token.refresh_from_db()
    assert token.revoked_at is None
