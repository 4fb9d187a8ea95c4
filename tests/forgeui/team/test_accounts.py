"""``/accounts/``: only login is anonymous unless e-mail is configured; then password
reset is on, throttled per address and audited."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import clear_url_caches

from forgeui import urls
from forgeui.models import AuditEntry
from forgeui.team import accounts

pytestmark = pytest.mark.django_db


def test_password_reset_is_off_without_e_mail(users: dict[str, User]) -> None:
    for path in ("/accounts/password_reset/", "/accounts/reset/done/"):
        assert Client().get(path).status_code == 404
    assert Client().get("/accounts/login/").status_code == 200


@pytest.fixture
def reset_on(settings: pytest.FixtureRequest) -> Iterator[None]:
    settings.FORGE_PASSWORD_RESET = True  # type: ignore[attr-defined]
    importlib.reload(urls)
    clear_url_caches()
    yield
    settings.FORGE_PASSWORD_RESET = False  # type: ignore[attr-defined]
    importlib.reload(urls)
    clear_url_caches()


def test_with_e_mail_password_reset_is_on_and_throttled_per_address(
        users: dict[str, User], reset_on: None) -> None:
    users["reviewer"].email = "reviewer@example.com"
    users["reviewer"].save()
    client = Client(REMOTE_ADDR="10.7.0.1")
    for _ in range(accounts.RESET_LIMIT):
        response = client.post("/accounts/password_reset/", {"email": "reviewer@example.com"})
        assert response.status_code == 302
    assert len(mail.outbox) == accounts.RESET_LIMIT
    assert client.post("/accounts/password_reset/",
                       {"email": "reviewer@example.com"}).status_code == 429
    assert len(mail.outbox) == accounts.RESET_LIMIT
    other = Client(REMOTE_ADDR="10.7.0.2")
    assert other.post("/accounts/password_reset/",
                      {"email": "reviewer@example.com"}).status_code == 302
    assert AuditEntry.objects.filter(action="password_reset.requested").count() == \
        accounts.RESET_LIMIT + 1
