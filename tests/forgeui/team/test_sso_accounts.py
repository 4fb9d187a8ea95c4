"""Who a single sign-on becomes: a linked account, roles exactly as the groups claim says."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.exceptions import SuspiciousOperation
from django.core.management import call_command
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory, override_settings
from django.utils import timezone

from forgeui.models import AuditEntry, SsoIdentity
from forgeui.permissions.roles import roles_of
from forgeui.team import sign_in
from forgeui.team.sso import ForgeOIDCBackend

pytestmark = pytest.mark.django_db
ISSUER = "https://id.example.com"
SSO = {"FORGE_SSO": True, "OIDC_RP_CLIENT_ID": "forge", "FORGE_OIDC_ISSUER": ISSUER,
       "OIDC_OP_TOKEN_ENDPOINT": f"{ISSUER}/token", "OIDC_OP_USER_ENDPOINT": f"{ISSUER}/me",
       "OIDC_OP_JWKS_ENDPOINT": f"{ISSUER}/jwks",
       "FORGE_OIDC_ROLES": {"approvers": "reviewer", "leads": ["supervisor", "reviewer"],
                            "audit": "auditor"}}


def claims(sub: str = "u-1", **more: Any) -> dict[str, Any]:
    return {"sub": sub, "preferred_username": "dana", "email": "dana@example.com", **more}


def groups_of(user: User) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


@override_settings(**SSO)
def test_roles_follow_the_groups_claim_at_every_sign_in() -> None:
    backend = ForgeOIDCBackend()
    user = backend.create_user(claims(groups=["approvers", "unmapped"]))
    assert groups_of(user) == ["reviewer"]
    Group.objects.get_or_create(name="finance")[0].user_set.add(user)  # not a forge role
    again = backend.update_user(user, claims(groups=["leads", "audit"]))
    assert groups_of(again) == ["auditor", "finance", "reviewer", "supervisor"]
    backend.update_user(user, claims(groups=["audit"]))
    assert groups_of(user) == ["auditor", "finance"]
    assert roles_of(user) == {"auditor"}
    backend.update_user(user, claims())  # no claim at all: no forge role
    assert groups_of(user) == ["finance"]
    synced = AuditEntry.objects.filter(action="sso.roles_synced").order_by("id")
    assert [e.detail for e in synced][-1] == {"added": [], "removed": ["auditor"]}
    assert {e.sign_in for e in synced} == {"sso"}


@override_settings(**SSO)
def test_a_provider_account_never_takes_over_a_local_one() -> None:
    local = User.objects.create_user("dana", email="dana@example.com", is_superuser=True)
    backend = ForgeOIDCBackend()
    assert not backend.filter_users_by_claims(claims()).exists()
    made = backend.create_user(claims(groups=["approvers"]))
    assert made.pk != local.pk and made.username == "dana-2"
    assert not made.is_superuser and not made.is_staff and not made.has_usable_password()
    assert SsoIdentity.objects.get(user=made).subject == "u-1"
    assert list(backend.filter_users_by_claims(claims())) == [made]
    assert not backend.filter_users_by_claims(claims(sub="u-2")).exists()


def test_tokens_for_another_issuer_or_client_are_refused() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    with override_settings(**SSO, OIDC_RP_IDP_SIGN_KEY=public.decode()):
        backend = ForgeOIDCBackend()
        for iss, aud in (("https://evil.example.com", "forge"), (ISSUER, ["someone-else"])):
            token = jwt.encode({"iss": iss, "aud": aud, "nonce": "n", "sub": "u"}, key, "RS256")
            with pytest.raises(SuspiciousOperation):
                backend.verify_token(token, nonce="n")
        token = jwt.encode({"iss": ISSUER, "aud": "forge", "nonce": "n", "sub": "u"}, key,
                           "RS256")
        assert backend.verify_token(token, nonce="n")["sub"] == "u"


def test_without_sso_the_login_page_has_no_button_and_the_routes_404() -> None:
    client = Client()
    assert "Sign in with SSO" not in client.get("/accounts/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


@override_settings(**SSO, OIDC_OP_AUTHORIZATION_ENDPOINT=f"{ISSUER}/authorize",
                   OIDC_RP_CLIENT_SECRET="s")
def test_with_sso_the_login_page_offers_it_and_keeps_next() -> None:
    page = Client().get("/accounts/login/?next=/runs/").content.decode()
    assert "Sign in with SSO" in page and 'href="/oidc/authenticate/?next=/runs/"' in page
    started = Client().get("/oidc/authenticate/?next=/runs/")
    assert started.status_code == 302 and started["Location"].startswith(f"{ISSUER}/authorize?")
    assert "code_challenge=" in started["Location"]


def callback_request() -> HttpRequest:
    """A request as the SSO callback has it, able to carry a message to the login page."""
    request = RequestFactory().get("/oidc/callback/")
    SessionMiddleware(lambda r: HttpResponse()).process_request(request)
    request._messages = FallbackStorage(request)  # what MessageMiddleware sets
    return request


@override_settings(**SSO)
@pytest.mark.parametrize("name", ["agent:newbot", "Agent:newbot", " agent:newbot"])
def test_a_provider_name_reserved_for_agents_is_refused_with_a_message(name: str) -> None:
    backend = ForgeOIDCBackend()
    backend.request = callback_request()
    assert backend.create_user(claims(preferred_username=name, groups=["approvers"])) is None
    assert not User.objects.exists()
    assert not SsoIdentity.objects.exists()
    said = [str(m) for m in get_messages(backend.request)]
    assert len(said) == 1 and "reserved for agents" in said[0]
    refused = AuditEntry.objects.get(action="sso.refused")
    assert refused.detail["subject"] == "u-1" and refused.actor_id is None
    # The agent's own token later goes to an agent user no person signs in as.
    out = io.StringIO()
    call_command("create_token", "--agent", "newbot", stdout=out)
    agent = User.objects.get(username="agent:newbot")
    assert not SsoIdentity.objects.filter(user=agent).exists()
    assert not backend.filter_users_by_claims(claims()).exists()


@override_settings(**SSO)
def test_a_provider_account_linked_to_an_agents_name_is_never_matched() -> None:
    agent = User.objects.create_user("agent:billing-bot")
    SsoIdentity.objects.create(user=agent, issuer=ISSUER, subject="u-1")
    assert not ForgeOIDCBackend().filter_users_by_claims(claims()).exists()


def test_an_identity_is_found_by_issuer_and_subject_together() -> None:
    backend = ForgeOIDCBackend()
    with override_settings(**SSO):
        made = backend.create_user(claims(sub="shared-sub"))
        assert list(backend.filter_users_by_claims(claims(sub="shared-sub"))) == [made]
    # Another provider that happens to use the same subject is another person.
    with override_settings(**{**SSO, "FORGE_OIDC_ISSUER": "https://other-idp.example.com"}):
        assert not backend.filter_users_by_claims(claims(sub="shared-sub")).exists()
        other = backend.create_user(claims(sub="shared-sub"))
        assert other.pk != made.pk
        assert list(backend.filter_users_by_claims(claims(sub="shared-sub"))) == [other]


def test_an_sso_session_ends_at_a_fixed_time_and_a_password_one_does_not() -> None:
    user = User.objects.create_user("dana", password="pw")
    sso_client = Client()
    with override_settings(FORGE_SSO_SESSION_SECONDS=600):
        sso_client.force_login(user, backend=sign_in.SSO_BACKEND)
        ends = sso_client.session.get_expiry_date()
        assert timedelta(seconds=590) < ends - timezone.now() <= timedelta(seconds=600)
        sso_client.get("/")  # a request does not move the end
        assert sso_client.session.get_expiry_date() == ends
    password_client = Client()
    password_client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    age = password_client.session.get_expiry_date() - timezone.now()
    assert age > timedelta(seconds=settings.SESSION_COOKIE_AGE - 60)
