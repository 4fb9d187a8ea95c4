"""Sign-ins and token use join the audit chain: one row per sign-in, and one per token
per session of use (its first use, then the first after an hour unused), not per call."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import ApiToken, AuditEntry, verify_chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer() -> User:
    from django.contrib.auth.models import Group

    user = User.objects.create_user("reviewer", password="pw-reviewer")
    user.groups.add(Group.objects.get_or_create(name="reviewer")[0])
    return user


def test_a_password_sign_in_is_audited_with_its_backend(reviewer: User) -> None:
    response = Client().post("/accounts/login/",
                             {"username": "reviewer", "password": "pw-reviewer"})
    assert response.status_code == 302
    [entry] = AuditEntry.objects.filter(action="login")
    assert (entry.actor, entry.object_id) == (reviewer, "reviewer")
    assert entry.detail["backend"].endswith("Backend")
    Client().post("/accounts/login/", {"username": "reviewer", "password": "wrong"})
    assert AuditEntry.objects.filter(action="login").count() == 1
    assert verify_chain().ok


def test_a_token_is_audited_once_per_session_of_use(reviewer: User) -> None:
    token, secret = ApiToken.objects.issue(reviewer, name="ci")
    client = Client(headers={"Authorization": f"Bearer {secret}"})
    for _ in range(3):
        assert client.get("/api/runs").status_code == 200
    [used] = AuditEntry.objects.filter(action="token.use")
    assert (used.actor, used.object_id, used.detail["name"]) == (reviewer, str(token.pk), "ci")
    # A use after an hour unused opens a new session; one within the minute does not.
    ApiToken.objects.filter(pk=token.pk).update(
        last_used_at=token.created_at - timedelta(hours=2))
    assert client.get("/api/runs").status_code == 200
    assert client.get("/api/runs").status_code == 200
    assert AuditEntry.objects.filter(action="token.use").count() == 2


def test_an_unknown_token_writes_no_use(reviewer: User) -> None:
    client = Client(headers={"Authorization": "Bearer forge_not-a-token"})
    assert client.get("/api/runs").status_code == 401
    assert not AuditEntry.objects.filter(action="token.use").exists()
