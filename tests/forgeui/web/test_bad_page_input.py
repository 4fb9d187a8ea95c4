"""A NUL character in a page's address, query string or form is a 400 page with the
reason, on every page route, before it can reach PostgreSQL (which cannot store it)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern

from forgeui.urls import pages

pytestmark = pytest.mark.django_db

ROUTES = [p for p in pages if isinstance(p, URLPattern)]


def url_of(route: URLPattern) -> str:
    return "/" + re.sub(r"<[^>]+>", "x", str(route.pattern))


@pytest.fixture
def client(users: dict[str, User]) -> Client:
    logged_in = Client()
    logged_in.force_login(User.objects.create_superuser("boss", password="boss-pw"))
    return logged_in


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_nul_in_a_query_string_is_a_400_page(client: Client, route: URLPattern) -> None:
    response = client.get(url_of(route), {"q": "a\x00b", "graph": "\x00"})
    assert response.status_code == 400
    assert "contains a NUL character" in response.content.decode()


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_nul_in_a_form_field_is_a_400_page(client: Client, route: URLPattern) -> None:
    response = client.post(url_of(route), {"text": "note\x00", "json_value": "true",
                                           "action": "json"})
    assert response.status_code == 400
    assert "form (&#x27;text&#x27;) contains a NUL character" in response.content.decode()


@pytest.mark.parametrize("path", ["/runs/a%00b/", "/threads/t%00/", "/interrupts/%00/"])
def test_nul_in_the_address_is_a_400_page(client: Client, path: str) -> None:
    assert client.get(path).status_code == 400


@pytest.mark.parametrize("query", ["q=pay%00", "graph=%00&tab=all", "q%00=1"])
def test_nul_inside_the_bulk_forms_filter_is_refused(client: Client, query: str) -> None:
    response = client.post("/interrupts/bulk/", {"action": "approve", "all": "1",
                                                 "query": query}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert "inbox filter cannot be used: it holds a NUL character" in response.content.decode()


def test_the_admin_and_login_pages_refuse_it_too(client: Client) -> None:
    assert client.get("/admin/auth/user/", {"q": "\x00"}).status_code == 400
    assert Client().post("/accounts/login/", {"username": "a\x00", "password": "x"}) \
        .status_code == 400


def test_the_api_keeps_its_own_422(users: dict[str, User]) -> None:
    from tests.forgeui.apiclient import Api

    api = Api(users)
    response = api.get("auditor", "/api/runs", graph="a\x00b")
    assert response.status_code == 422


@pytest.mark.django_db(transaction=True)
async def test_under_asgi_the_refusal_renders_too(users: dict[str, User]) -> None:
    from asgiref.sync import sync_to_async
    from django.test import AsyncClient

    client = AsyncClient()
    await sync_to_async(client.force_login)(users["auditor"])
    response = await client.get("/runs/", {"q": "\x00"})
    assert response.status_code == 400
    assert "auditor" in response.content.decode()  # the page knows who is signed in
