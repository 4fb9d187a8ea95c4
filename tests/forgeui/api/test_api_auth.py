"""API tokens (hashed, revocable, from a command or the admin) and session auth with CSRF."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from forgeui.models import ApiToken, AuditEntry, Run
from forgeui.permissions.roles import groups_of
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(secret: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {secret}"})


def test_create_token_prints_a_secret_that_is_stored_only_as_a_hash(api: Api) -> None:
    out = StringIO()
    call_command("create_token", "auditor", stdout=out)
    secret = out.getvalue().strip()
    assert secret.startswith("forge_") and len(secret) > 40
    token = ApiToken.objects.get(key_hash=hashlib.sha256(secret.encode()).hexdigest())
    assert token.user == api.users["auditor"] and secret not in str(vars(token))
    assert token.last_used_at is None
    assert bearer(secret).get("/api/runs").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    with pytest.raises(CommandError, match="no user"):
        call_command("create_token", "ghost", stdout=StringIO())


def test_tokens_expire_after_the_default_term_or_the_days_asked_for(
        api: Api, settings: Any) -> None:
    settings.FORGE_TOKEN_DAYS = 30
    out = StringIO()
    call_command("create_token", "auditor", stdout=out)
    default = ApiToken.objects.get(key_hash=ApiToken.hash(out.getvalue().strip()))
    assert abs(default.expires_at - timezone.now() - timedelta(days=30)) < timedelta(minutes=5)
    out = StringIO()
    call_command("create_token", "auditor", "--days", "2", stdout=out)
    short = out.getvalue().strip()
    token = ApiToken.objects.get(key_hash=ApiToken.hash(short))
    assert abs(token.expires_at - timezone.now() - timedelta(days=2)) < timedelta(minutes=5)
    assert bearer(short).get("/api/runs").status_code == 200 and token.state == "active"
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    token.refresh_from_db()
    assert bearer(short).get("/api/runs").status_code == 401 and token.state == "expired"
    for days in ("0", "-1", "100000"):
        with pytest.raises(CommandError, match="--days"):
            call_command("create_token", "auditor", "--days", days, stdout=StringIO())


def test_the_admin_lists_each_tokens_expiry_and_state(api: Api) -> None:
    live, _ = ApiToken.objects.issue(api.users["reviewer"], name="live-one")
    gone, _ = ApiToken.objects.issue(api.users["reviewer"], name="gone-one")
    ApiToken.objects.filter(pk=gone.pk).revoke()
    admin = Client()
    admin.force_login(api.users["admin"])
    page = admin.get("/admin/forgeui/apitoken/").content.decode()
    assert "Expires at" in page and ">active<" in page and ">revoked<" in page
    detail = admin.get(f"/admin/forgeui/apitoken/{live.pk}/change/").content.decode()
    assert "Expires at" in detail and f"{live.expires_at.year}" in detail


def test_bad_revoked_and_inactive_tokens_are_401(api: Api) -> None:
    assert bearer("forge_not-a-token").get("/api/runs").status_code == 401
    assert Client(headers={"Authorization": "Bearer"}).get("/api/runs").status_code == 401
    assert Client(headers={"Authorization": "Basic abc"}).get("/api/runs").status_code == 401
    ApiToken.objects.filter(user=api.users["auditor"]).revoke()
    assert api.get("auditor", "/api/runs").status_code == 401
    api.users["reviewer"].is_active = False
    api.users["reviewer"].save()
    assert api.get("reviewer", "/api/runs").status_code == 401


def test_a_tokens_roles_are_its_owners_groups_now_every_one_of_them(api: Api) -> None:
    """The owner's groups are read with the token on each request: every group counts,
    none gives a 403, and a group taken away is gone on the very next request."""
    sam = User.objects.create_user("sam")
    secret = ApiToken.objects.issue(sam)[1]
    assert bearer(secret).get("/api/runs").status_code == 403  # no group at all
    auditor, supervisor = (Group.objects.get_or_create(name=name)[0]
                           for name in ("auditor", "supervisor"))
    sam.groups.add(auditor, supervisor, Group.objects.create(name="not-a-role"))
    start = {"graph": "transfer", "input": {"amount": 5, "to": "acme"}}
    assert bearer(secret).get("/api/runs").status_code == 200
    assert bearer(secret).post("/api/runs", start, content_type="application/json"
                               ).status_code == 201
    sam.groups.remove(supervisor)
    assert bearer(secret).post("/api/runs", start, content_type="application/json"
                               ).status_code == 403
    assert bearer(secret).get("/api/runs").status_code == 200


def test_a_token_is_found_with_every_group_of_its_owner_in_one_query(api: Api) -> None:
    sam = User.objects.create_user("sam")
    secret = ApiToken.objects.issue(sam)[1]
    names = {"supervisor", "finance:reviewer", "g1", "g2", "g3"}
    sam.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in names))
    with CaptureQueriesContext(connection) as queries:
        found = ApiToken.objects.authenticate(secret)
        assert found is not None and groups_of(found.user) == names
    assert sum("auth_group" in q["sql"] for q in queries.captured_queries) == 1
    solo = ApiToken.objects.authenticate(ApiToken.objects.issue(User.objects.create_user(
        "solo"))[1])
    with CaptureQueriesContext(connection) as queries:
        assert solo is not None and groups_of(solo.user) == frozenset()
    assert queries.captured_queries == []


def test_a_token_request_ignores_the_session_cookie(api: Api) -> None:
    client = Client()
    client.force_login(api.users["auditor"])
    assert client.get("/api/runs").status_code == 200
    response = client.get("/api/runs", headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401


def test_token_posts_need_no_csrf_token(api: Api) -> None:
    client = Client(enforce_csrf_checks=True,
                    headers={"Authorization": f"Bearer {api.tokens['supervisor']}"})
    response = client.post("/api/runs", {"graph": "transfer"}, content_type="application/json")
    assert response.status_code == 201


def test_session_posts_need_the_csrf_token(api: Api) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(api.users["supervisor"])
    assert client.get("/api/graphs").status_code == 200  # safe methods need none
    response = client.post("/api/runs", {"graph": "transfer"}, content_type="application/json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert not Run.objects.exists()
    client.get("/api/docs")  # the docs page sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    response = client.post("/api/runs", {"graph": "transfer"}, content_type="application/json",
                           headers={"X-CSRFToken": csrf})
    assert response.status_code == 201


def test_admin_creates_a_token_shows_it_once_and_revokes_it(api: Api) -> None:
    admin = Client()
    admin.force_login(api.users["admin"])
    response = admin.post("/admin/forgeui/apitoken/add/",
                          {"user": api.users["reviewer"].pk, "name": "laptop"}, follow=True)
    assert response.status_code == 200
    message = next(str(m) for m in response.context["messages"] if "forge_" in str(m))
    secret = message.split("token for reviewer: ")[1].split(" ")[0]
    token = ApiToken.objects.get(name="laptop")
    assert token.key_hash == ApiToken.hash(secret) and token.prefix == secret[:12]
    assert bearer(secret).get("/api/graphs").status_code == 200
    response = admin.post("/admin/forgeui/apitoken/", {"action": "revoke",
                                                       "_selected_action": [token.pk]},
                          follow=True)
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert bearer(secret).get("/api/graphs").status_code == 401


@pytest.mark.parametrize("path", ["/api/openapi.json", "/api/docs"])
def test_the_schema_and_docs_need_a_forge_role(api: Api, path: str) -> None:
    roleless = Client()
    roleless.force_login(api.users["nobody"])
    refused = roleless.get(path)
    assert refused.status_code == 403 and "no forge role" in refused.json()["detail"]
    assert AuditEntry.objects.filter(action="api.denied", actor=api.users["nobody"]).exists()
    assert bearer(api.tokens["nobody"]).get(path).status_code == 403
    assert Client().get(path).status_code == 401
    for who in ("auditor", "reviewer"):
        assert bearer(api.tokens[who]).get(path).status_code == 200
        reader = Client()
        reader.force_login(api.users[who])
        assert reader.get(path).status_code == 200


def test_a_csrf_failure_leaves_no_audit_row_in_the_users_name(api: Api) -> None:
    victim = Client(enforce_csrf_checks=True)
    victim.force_login(api.users["supervisor"])
    before = AuditEntry.objects.count()
    forged = victim.post("/api/runs", {"graph": "transfer"}, content_type="application/json")
    assert forged.status_code == 403 and "CSRF" in forged.json()["detail"]
    assert AuditEntry.objects.count() == before


def test_a_caller_without_a_role_cannot_fill_the_audit_log(api: Api) -> None:
    """Every refusal is logged; the audit log gets one row an hour per such caller,
    whatever paths and bodies they send."""
    agent = User.objects.create_user("agent:bot")
    agent_secret = ApiToken.objects.issue(agent, agent="bot")[1]
    roleless = Client()
    roleless.force_login(api.users["nobody"])
    for n in range(10):
        assert api.get("nobody", f"/api/runs/=cmd{n}").status_code == 403
        assert api.post("nobody", "/api/steering", {"text": f"=cmd{n}"}).status_code == 403
        assert roleless.get("/api/openapi.json").status_code == 403
        assert bearer(agent_secret).get(f"/api/runs/=cmd{n}").status_code == 403
    # One refusal row each; signing in and a token's first use are audited once, not per call.
    def actions(user: User) -> list[str]:
        return sorted(AuditEntry.objects.filter(actor=user).values_list("action", flat=True))
    assert actions(api.users["nobody"]) == ["api.denied", "login", "token.use"]
    assert actions(agent) == ["api.denied", "token.use"]
    assert not AuditEntry.objects.filter(actor__isnull=True).exists()
