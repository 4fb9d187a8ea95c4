"""Starting a run from the Runs page: a form from the graph's input schema, else JSON."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.models import AuditEntry, Interrupt, Run
from tests.forgeui.apiclient import Api
from tests.forgeui.conftest import logged_in

pytestmark = pytest.mark.django_db(transaction=True)
QUEUED = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
          "notify": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def test_only_supervisors_get_the_start_form(users: dict[str, User]) -> None:
    page = logged_in(users["supervisor"]).get("/runs/").content.decode()
    assert 'id="start-run"' in page and '<option value="deploy"' in page
    for who in ("reviewer", "auditor"):
        client = logged_in(users[who])
        assert 'id="start-run"' not in client.get("/runs/").content.decode()
        refused = client.post("/runs/start/", {"graph": "transfer", "json_input": "{}"})
        assert refused.status_code == 403
    assert not Run.objects.exists()


def test_a_graph_with_an_input_schema_gets_a_form(users: dict[str, User]) -> None:
    client = logged_in(users["supervisor"])
    form = client.get("/runs/start/form/", {"graph": "deploy"}).content.decode()
    assert 'name="input-version"' in form and 'name="input-canary"' in form
    plain = client.get("/runs/start/form/", {"graph": "transfer"}).content.decode()
    assert "input-" not in plain and 'name="json_input"' in plain
    response = client.post("/runs/start/", {"graph": "deploy", "mode": "form",
                                            "input-version": "2.5.0", "input-canary": "true"})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.run_id}/"
    assert run.input == {"version": "2.5.0", "canary": True} and run.started_by == \
        users["supervisor"]
    assert Interrupt.objects.get(run=run).node == "deploy"  # the breakpoint: paused there


def test_mistakes_come_back_with_what_was_typed(users: dict[str, User]) -> None:
    client = logged_in(users["supervisor"])
    bad = client.post("/runs/start/", {"graph": "transfer", "json_input": '{"amount": 5'},
                      HTTP_HX_REQUEST="true")
    html = bad.content.decode()
    assert bad.status_code == 422 and "not valid JSON" in html
    assert '{&quot;amount&quot;: 5</textarea>' in html
    wrong = client.post("/runs/start/", {"graph": "deploy", "mode": "json",
                                         "json_input": '{"version": 5}'})
    assert wrong.status_code == 422
    assert "does not match the graph&#x27;s input_schema at $.version" in wrong.content.decode()
    unclear = client.post("/runs/start/", {"graph": "deploy", "mode": "form",
                                           "input-version": "2.5.1", "input-canary": "maybe"})
    html = unclear.content.decode()
    assert unclear.status_code == 422 and "check the highlighted fields" in html
    assert 'class="field has-error"' in html and 'value="2.5.1"' in html
    assert not Run.objects.exists()
    done = client.post("/runs/start/", {"graph": "transfer", "json_input": '{"amount": 5}'},
                       HTTP_HX_REQUEST="true")
    assert done.status_code == 204 and done["HX-Redirect"].startswith("/runs/")


def test_an_unknown_graph_is_refused_not_replaced(users: dict[str, User]) -> None:
    client = logged_in(users["supervisor"])
    refused = client.post("/runs/start/", {"graph": "no-such-graph",
                                           "json_input": '{"amount": 5}'}, HTTP_HX_REQUEST="true")
    html = refused.content.decode()
    assert refused.status_code == 422 and "unknown graph &#x27;no-such-graph&#x27;" in html
    assert '{&quot;amount&quot;: 5}</textarea>' in html
    assert not Run.objects.exists() and not AuditEntry.objects.filter(action="run.start")


@pytest.mark.parametrize("typed", ['{"note": "\\u0000"}', '{"note": "\\ud800"}'])
def test_text_that_cannot_be_stored_comes_back_with_what_was_typed(
        users: dict[str, User], typed: str) -> None:
    client = logged_in(users["supervisor"])
    refused = client.post("/runs/start/", {"graph": "transfer", "json_input": typed},
                          HTTP_HX_REQUEST="true")
    html = refused.content.decode()
    assert refused.status_code == 422 and "cannot be stored" in html
    assert f"{typed.replace(chr(34), '&quot;')}</textarea>" in html
    assert not Run.objects.exists() and not AuditEntry.objects.filter(action="run.start")


def test_the_api_checks_the_input_schema_too(users: dict[str, User]) -> None:
    api = Api(users)
    response = api.post("supervisor", "/api/runs", {"graph": "deploy", "input": {"version": 5}})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "input", "version"]
    assert api.post("supervisor", "/api/runs", {"graph": "deploy"}).status_code == 201


def test_a_queued_run_opens_as_starting_then_follows_the_run(users: dict[str, User]) -> None:
    client = logged_in(users["supervisor"])
    with override_settings(TASKS=QUEUED):
        response = client.post("/runs/start/", {"graph": "transfer", "json_input": "{}"})
    page = client.get(response["Location"])
    assert page.status_code == 200 and "Starting…" in page.content.decode()
    assert "data-live-busy" in page.content.decode()
    run_id = response["Location"].strip("/").split("/")[-1]
    assert AuditEntry.objects.get(action="run.start").run_id == run_id
    assert client.get("/runs/0123456789abcdef/").status_code == 404


def test_a_key_typed_twice_is_refused_with_what_was_typed(users: dict[str, User]) -> None:
    client = logged_in(users["supervisor"])
    typed = '{"amount": 5,\n "amount": 5000}'
    refused = client.post("/runs/start/", {"graph": "transfer", "json_input": typed},
                          HTTP_HX_REQUEST="true")
    html = refused.content.decode()
    assert refused.status_code == 422
    assert "the key &#x27;amount&#x27; appears twice in one object" in html
    assert '{&quot;amount&quot;: 5,\n &quot;amount&quot;: 5000}</textarea>' in html
    assert not Run.objects.exists()
