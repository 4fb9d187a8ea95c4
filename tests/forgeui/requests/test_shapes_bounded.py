"""An agent's ``args_schema`` is applied in bounded time: regexes on a linear-time engine,
references only inside the schema, formats asserted; what cannot be bounded is refused
when the request is made. Through the API, with a real agent token and a reviewer."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from forgeui.models import AgentRequest, ApiToken, Interrupt
from forgeui.runs import answer_rules
from tests.forgeui.apiclient import Api
from tests.processes import serve_in_background

CATASTROPHIC = "^(a+)+$"
EVIL = "a" * 40 + "!"  # exponential backtracking for Python's re on the pattern above


def ask(api: Api, args_schema: Any, args: Any = None) -> Any:
    secret = ApiToken.objects.issue(api.users["nobody"], name="bot", agent="mailer")[1]
    return api.client("reviewer").post(
        "/api/requests", {"actions": [{"name": "send", "args": args or {"to": "a"},
                                       "args_schema": args_schema}]},
        content_type="application/json", headers={"Authorization": f"Bearer {secret}"})


def edit(api: Api, request_id: str, args: Any) -> Any:
    return api.post("reviewer", f"/api/requests/{request_id}/decision",
                    {"decisions": [{"type": "edit", "args": args}]})


def strings(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": "string", **extra}
                                             for name, extra in properties.items()}}


def test_a_backtracking_pattern_refuses_an_edit_at_once(api: Api) -> None:
    made = ask(api, strings(to={"pattern": CATASTROPHIC}))
    assert made.status_code == 201, made.content
    started = time.monotonic()
    refused = edit(api, made.json()["id"], {"to": EVIL})
    assert time.monotonic() - started < 5  # a backtracking engine: far longer
    assert refused.status_code == 422
    assert "does not match" in refused.content.decode()
    assert edit(api, made.json()["id"], {"to": "aaa"}).status_code == 200


def test_pattern_properties_and_the_properties_they_leave_run_in_linear_time(
        api: Api) -> None:
    schema = {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}},
              "additionalProperties": False}
    made = ask(api, schema, {"aa": 1})
    started = time.monotonic()
    refused = edit(api, made.json()["id"], {EVIL: 1})
    assert time.monotonic() - started < 5  # a backtracking engine: far longer
    assert refused.status_code == 422 and "unexpected" in refused.content.decode()
    assert edit(api, made.json()["id"], {"aaa": 2}).status_code == 200


def test_a_graphs_answer_schema_goes_through_the_same_bounded_check() -> None:
    payload = {"answer_schema": {"type": "string", "pattern": CATASTROPHIC}}
    started = time.monotonic()
    with pytest.raises(answer_rules.AnswerMismatch, match="does not match"):
        answer_rules.check(payload, EVIL)
    assert time.monotonic() - started < 5  # a backtracking engine: far longer
    problem = answer_rules.schema_problem({"type": "string", "pattern": "(a)\\1"})
    assert problem is not None and "linear time" in problem


class Recorder(BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self) -> None:
        Recorder.asked.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"type": "string"}')

    def log_message(self, *args: Any) -> None:
        pass


def test_a_remote_reference_is_never_fetched() -> None:
    server = HTTPServer(("127.0.0.1", 0), Recorder)
    serve_in_background(server)
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        for schema in ({"$ref": f"{base}/schema.json"},
                       {"$id": f"{base}/", "$ref": "other.json"}):
            with pytest.raises(answer_rules.AnswerMismatch, match="only references inside"):
                answer_rules.check({"answer_schema": schema}, "x")
    finally:
        server.shutdown()
        server.server_close()
    assert Recorder.asked == []


@pytest.mark.parametrize(("schema", "words"), [
    (strings(to={"pattern": "^(a)\\1$"}), "linear time"),
    (strings(to={"pattern": "^(?=a)"}), "linear time"),
    ({"type": "object", "patternProperties": {"(?!x)": {}}}, "linear time"),
    (strings(to={"pattern": "(a{100}){100}"}), "linear time"),
    (strings(to={"pattern": "a" * 1001}), "longer than 1000 characters"),
    ({"type": "object", "properties": {"to": {"$ref": "https://example.invalid/s.json"}}},
     "only references inside the schema"),
    ({"type": "object", "properties": {"to": {"$ref": "#"}}}, "leads back into itself"),
    ({"$defs": {"node": {"properties": {"next": {"$ref": "#/$defs/node"}}}},
      "$ref": "#/$defs/node"}, "leads back into itself"),
    ({"type": "object", "properties": {"to": {"$ref": "#/$defs/missing"}}},
     "not in the schema"),
    ({"properties": {"to": {"$schema": "http://json-schema.org/draft-07/schema#",
                            "pattern": CATASTROPHIC}}}, "only its root may"),
    ({"patternProperties": {"^x": {}}, "unevaluatedProperties": False}, "not supported"),
])
def test_a_schema_that_cannot_be_bounded_is_refused_when_the_request_is_made(
        api: Api, schema: dict[str, Any], words: str) -> None:
    refused = ask(api, schema)
    assert refused.status_code == 422, refused.content
    body = refused.content.decode()
    assert words in body and "args_schema" in body
    assert AgentRequest.objects.count() == 0


def test_a_local_reference_is_followed_when_a_reviewer_edits(api: Api) -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "definitions": {"short": {"type": "string", "maxLength": 3}},
              "properties": {"to": {"$ref": "#/definitions/short"}}}
    made = ask(api, schema)
    assert made.status_code == 201, made.content
    assert edit(api, made.json()["id"], {"to": "toolong"}).status_code == 422
    assert edit(api, made.json()["id"], {"to": "b"}).status_code == 200
    read = api.get("reviewer", f"/api/requests/{made.json()['id']}").json()
    assert read["decisions"][0]["args"] == {"to": "b"}


@pytest.mark.parametrize(("form", "bad", "good"), [
    ("email", "not an address", "ana@example.com"),
    ("uri", "no scheme here", "https://example.com/x"),
    ("date-time", "next tuesday", "2026-12-05T10:00:00Z"),
])
def test_formats_of_the_args_schema_are_checked(api: Api, form: str, bad: str,
                                                 good: str) -> None:
    made = ask(api, strings(value={"format": form}), {"value": good})
    refused = edit(api, made.json()["id"], {"value": bad})
    assert refused.status_code == 422 and f"is not a '{form}'" in refused.content.decode()
    assert edit(api, made.json()["id"], {"value": good}).status_code == 200


@pytest.mark.parametrize("schema", [{"$ref": "#"}, strings(to={"pattern": "(a)\\1"}),
                                    {"$ref": "https://example.invalid/s.json"}])
def test_a_stored_schema_that_cannot_be_bounded_refuses_edits_without_a_500(
        api: Api, schema: dict[str, Any]) -> None:
    """A request stored before schemas were checked this way."""
    made = ask(api, strings(to={})).json()
    interrupt = Interrupt.objects.get(pk=made["interrupt_id"])
    payload = {**interrupt.payload}
    payload["calls"][0]["args_schema"] = schema
    Interrupt.objects.filter(pk=interrupt.pk).update(payload=payload)
    refused = edit(api, made["id"], {"to": "b"})
    assert refused.status_code == 422, refused.content
    assert "edits cannot be checked" in refused.content.decode()
