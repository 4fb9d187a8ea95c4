"""Single sign-on end to end: Chromium, forge, and a real OpenID Connect provider.

The provider is django-oauth-toolkit in a Django project of its own
(``tests/oidc_provider``), in a second process on a loopback port, signing with an RSA
key made for this run. forge fetches its tokens, keys and userinfo over HTTP, as it
would from any provider: nothing on either side is mocked.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from playwright.sync_api import expect

from tests.processes import free_port

from .conftest import (
    PASSWORDS,
    ROOT,
    SIZES,
    LiveServer,
    Seed,
    serve,
    stop_process,
    wait_until_up,
)
from .test_accessibility import check

CLIENT_ID = "forge-e2e"
ROLES = {"payments": "reviewer", "compliance": "auditor"}


@dataclass
class Provider:
    issuer: str
    env: dict[str, str]
    client_secret: str

    def set_people(self, redirect_uri: str, groups: dict[str, list[str]]) -> None:
        """Register forge as a client, and each person with the groups of their claim."""
        spec = {"client_id": CLIENT_ID, "client_secret": self.client_secret,
                "redirect_uri": redirect_uri,
                "users": {name: {"password": f"{name}-at-idp", "email": f"{name}@corp.example",
                                 "groups": names} for name, names in groups.items()}}
        done = subprocess.run([sys.executable, "-m", "tests.oidc_provider.accounts",
                               json.dumps(spec)], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr


def rsa_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    folder = tmp_path_factory.mktemp("idp")
    port = free_port()
    issuer = f"http://127.0.0.1:{port}/o"
    env = {**{k: v for k, v in os.environ.items()
              if k not in ("DATABASE_URL", "REDIS_URL")},
           "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings", "PYTHONPATH": str(ROOT),
           "OIDC_PROVIDER_DB": str(folder / "idp.sqlite3"),
           "OIDC_PROVIDER_RSA_KEY": rsa_key_pem(), "OIDC_PROVIDER_ISSUER": issuer,
           "PYTHONUNBUFFERED": "1"}
    migrated = subprocess.run([sys.executable, "-m", "django", "migrate", "--verbosity", "0"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert migrated.returncode == 0, migrated.stderr
    with (folder / "idp.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_up(issuer, process, probe="/.well-known/openid-configuration",
                          name="the provider")
            yield Provider(issuer, env, secrets.token_urlsafe(24))
        finally:
            stop_process(process)


@pytest.fixture(scope="module")
def sso_forge(tmp_path_factory: pytest.TempPathFactory, seeded: Seed,
              provider: Provider) -> Iterator[LiveServer]:
    issuer = provider.issuer
    with serve(tmp_path_factory.mktemp("sso-forge"), seeded,
               OIDC_RP_CLIENT_ID=CLIENT_ID, OIDC_RP_CLIENT_SECRET=provider.client_secret,
               FORGE_OIDC_ISSUER=issuer,
               OIDC_OP_AUTHORIZATION_ENDPOINT=f"{issuer}/authorize/",
               OIDC_OP_TOKEN_ENDPOINT=f"{issuer}/token/",
               OIDC_OP_USER_ENDPOINT=f"{issuer}/userinfo/",
               OIDC_OP_JWKS_ENDPOINT=f"{issuer}/.well-known/jwks.json",
               FORGE_OIDC_ROLES=json.dumps(ROLES)) as server:
        yield server


def forge_rows(server: LiveServer, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    database = server.env["DATABASE_URL"].removeprefix("sqlite:///")
    with closing(sqlite3.connect(Path(database), timeout=30)) as db:
        return db.execute(sql, args).fetchall()


def forge_groups(server: LiveServer, username: str) -> list[str]:
    return [name for (name,) in forge_rows(
        server, "SELECT g.name FROM auth_group g JOIN auth_user_groups ug ON ug.group_id = g.id"
                " JOIN auth_user u ON u.id = ug.user_id WHERE u.username = ? ORDER BY g.name",
        username)]


def sign_in_with_sso(browser: Any, server: LiveServer, who: str, path: str) -> Any:
    """A fresh browser (no session at forge or at the provider) signing in through SSO."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(f"{server.url}{path}")
    expect(page).to_have_url(f"{server.url}/accounts/login/?next={path}")
    page.get_by_role("link", name="Sign in with SSO").click()
    expect(page.locator("h1")).to_have_text("Test identity provider")
    page.fill("#id_username", who)
    page.fill("#id_password", f"{who}-at-idp")
    page.get_by_role("button", name="Sign in at the provider").click()
    page.wait_for_url(f"{server.url}{path}")
    return page


def test_sso_gives_roles_from_the_groups_claim_and_decisions_record_sso(
        browser: Any, sso_forge: LiveServer, provider: Provider) -> None:
    provider.set_people(f"{sso_forge.url}/oidc/callback/",
                        {"dana": ["payments", "all-staff"]})
    [paused] = sso_forge.start("transfer", {"amount": 250})
    page = sign_in_with_sso(browser, sso_forge, "dana", f"/interrupts/{paused['id']}/")
    try:
        assert forge_groups(sso_forge, "dana") == ["reviewer"]
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("#notices")).to_contain_text("was recorded")
        [(who, method)] = forge_rows(
            sso_forge, "SELECT u.username, a.sign_in FROM forgeui_answer a JOIN auth_user u "
                       "ON u.id = a.user_id JOIN forgeui_interrupt i ON i.id = a.interrupt_id "
                       "WHERE i.id = ?", paused["id"])
        assert (who, method) == ("dana", "sso")
        assert forge_rows(sso_forge, "SELECT sign_in FROM forgeui_auditentry WHERE "
                                     "action = 'answer' AND object_id = ?",
                          paused["id"]) == [("sso",)]
    finally:
        page.context.close()


def test_the_next_sign_in_adds_and_removes_roles(browser: Any, sso_forge: LiveServer,
                                                provider: Provider) -> None:
    callback = f"{sso_forge.url}/oidc/callback/"
    provider.set_people(callback, {"erin": ["payments"]})
    first = sign_in_with_sso(browser, sso_forge, "erin", "/")
    first.context.close()
    assert forge_groups(sso_forge, "erin") == ["reviewer"]
    provider.set_people(callback, {"erin": ["compliance"]})
    second = sign_in_with_sso(browser, sso_forge, "erin", "/audit/")
    try:
        assert forge_groups(sso_forge, "erin") == ["auditor"]
        expect(second.locator("h1")).to_contain_text("Audit")
        second.goto(f"{sso_forge.url}/audit/?action=sso.roles")
        expect(second.locator("table.audit")).to_contain_text("sso.roles_synced")
        expect(second.locator("table.audit")).to_contain_text("(sso)")
    finally:
        second.context.close()


@pytest.mark.parametrize("size", SIZES, ids=["1440x900", "390x844"])
def test_local_accounts_still_sign_in_with_a_password(browser: Any, sso_forge: LiveServer,
                                                      size: dict[str, int]) -> None:
    # The page's CSP forbids inline scripts, axe's tag included: tests only bypass it.
    context = browser.new_context(viewport=size, bypass_csp=True)
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        page.goto(f"{sso_forge.url}/accounts/login/")
        expect(page.get_by_role("link", name="Sign in with SSO")).to_be_visible()
        assert check(page, "login with SSO") == []
        page.goto(f"{sso_forge.url}/accounts/login/?sso=failed")
        expect(page.get_by_role("alert")).to_contain_text("Single sign-on did not complete")
        assert check(page, "login after a failed SSO") == []
        page.fill("#id_username", "reviewer")
        page.fill("#id_password", PASSWORDS["reviewer"])
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{sso_forge.url}/")
    finally:
        context.close()
