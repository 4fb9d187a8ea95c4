"""A graph's own page: its drawing before any run, and the form that starts one."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.models import Run
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)


def drawing(page: str) -> str:
    return page[page.index("<svg"):page.index("</svg>") + 6]


def test_a_graph_is_drawn_before_any_run_with_its_start_form(users: dict[str, User]) -> None:
    response = logged_in(users["supervisor"]).get("/graphs/supervisor/")
    assert response.status_code == 200 and not Run.objects.exists()
    svg = drawing(response.content.decode())
    nodes = set(re.findall(r'data-node="([^"]+)"', svg))
    assert nodes == {"plan", "research_agent", "research_agent/find_sources", "writer_agent",
                     "writer_agent/draft", "summarize"}
    assert not re.search(r"is-(paused|running|failed|cancelled|done|waiting)", svg)
    assert "Graph supervisor: 4 nodes</title>" in svg
    page = response.content.decode()
    assert 'id="start-run"' in page and "Start a run of supervisor" in page
    assert '<input type="hidden" name="graph" value="supervisor">' in page
    assert 'id="start-graph"' not in page  # this page starts this graph only


def test_roles_that_cannot_start_runs_see_the_drawing_only(users: dict[str, User]) -> None:
    page = logged_in(users["auditor"]).get("/graphs/deploy/").content.decode()
    assert "<svg" in page and 'id="start-run"' not in page


def test_an_unknown_graph_is_a_404_naming_the_registered_ones(users: dict[str, User]) -> None:
    response = logged_in(users["reviewer"]).get("/graphs/no-such-graph/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "No graph is registered as “no-such-graph”" in page
    assert 'href="/graphs/transfer/"' in page and "<svg" not in page


def test_a_graph_that_cannot_load_says_why_instead_of_failing(users: dict[str, User]) -> None:
    with override_settings(FORGE_GRAPHS={"transfer": "runtime.exampels:transfer"}):
        response = logged_in(users["supervisor"]).get("/graphs/transfer/")
    assert response.status_code == 200
    assert "The graph cannot be drawn: graph &#x27;transfer&#x27; cannot be loaded" in \
        response.content.decode()


def test_the_runs_list_and_the_start_form_link_to_the_graph_page(users: dict[str, User]) -> None:
    client = logged_in(users["supervisor"])
    client.post("/runs/start/", {"graph": "transfer", "json_input": "{}"})
    runs = client.get("/runs/").content.decode()
    assert '<a href="/graphs/transfer/"' in runs
    form = client.get("/runs/start/form/", {"graph": "deploy"}).content.decode()
    assert 'href="/graphs/deploy/"' in form


def test_bad_input_from_the_graph_page_keeps_what_was_typed(users: dict[str, User]) -> None:
    response = logged_in(users["supervisor"]).post(
        "/runs/start/", {"graph": "transfer", "fixed": "1", "json_input": '{"amount": 12,'},
        headers={"HX-Request": "true"})
    assert response.status_code == 422
    page = response.content.decode()
    assert "{&quot;amount&quot;: 12," in page and 'role="alert"' in page
    assert "Start a run of transfer" in page and 'id="start-graph"' not in page
    assert not Run.objects.exists()
