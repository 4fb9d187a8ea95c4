"""Hostile and sloppy input: every refusal is a 4xx with a message, and writes no state.

Limits under test (``forgeui.api.parser``): 1 MiB bodies, depth 32, no NaN/Infinity, integers
within ±(2**53-1), UTF-8 only, no NUL or lone surrogates; unknown fields and wrong types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from forgeui.api.parser import MAX_BODY_BYTES, MAX_DEPTH
from forgeui.models import Answer, AuditEntry, Checkpoint, Interrupt, SteeringNote
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def resume_path(api: Api) -> str:
    (interrupt,) = api.pending_of(api.start("transfer"))
    return f"/api/interrupts/{interrupt['id']}/resume"


def state() -> tuple[int, ...]:
    return (Checkpoint.objects.count(), Answer.objects.count(), SteeringNote.objects.count(),
            Interrupt.objects.pending().count())


def refused(api: Api, path: str, raw: bytes | str, status: int = 422) -> dict[str, Any]:
    before = state()
    response = api.post("reviewer", path, raw=raw)
    assert response.status_code == status, (raw[:80], response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json")
    assert state() == before
    return response.json()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("raw", [
    b'{"value": ',                                  # truncated
    b"{'value': 1}",                                # not JSON
    b'{"value": NaN}', b'{"value": Infinity}', b'{"value": -Infinity}',
    b'{"value": 1e999}',                            # overflows a double
    b'{"value": 9007199254740992}',                 # 2**53
    b'{"value": -9007199254740992}',
    ('{"value": ' + "9" * 5000 + "}").encode(),     # beyond Python's own digit limit
    b'{"value": "\xff\xfe"}',                       # invalid UTF-8
    b'{"value": "\\ud800"}',                        # a lone surrogate
    b'{"value": "a\\u0000b"}',                      # NUL: PostgreSQL's jsonb refuses it
    b'{"\\u0000": 1, "value": 1}',
    b'{"value": true, "value": false}',             # duplicate keys: which one wins?
    b'{"value": {"a": 1, "a": 2}}',
    ('{"value": ' + nested(MAX_DEPTH) + "}").encode(),
    ('{"value": ' + nested(200_000) + "}").encode(),  # would blow the recursion limit
])
def test_unsafe_json_is_422_and_changes_nothing(api: Api, resume_path: str, raw: bytes) -> None:
    body = refused(api, resume_path, raw)
    assert body["detail"][0]["loc"] == ["body"] and body["detail"][0]["msg"]


def test_the_limits_themselves_are_accepted(api: Api, resume_path: str) -> None:
    value = {"big": 2**53 - 1, "small": -(2**53 - 1), "deep": json.loads(nested(MAX_DEPTH - 2)),
             "text": "ünïcødé ✓"}
    assert api.post("reviewer", resume_path, {"value": value}).status_code == 202
    assert Answer.objects.get().value == value


def test_bodies_over_the_limit_are_413(api: Api, resume_path: str) -> None:
    padding = "x" * MAX_BODY_BYTES
    body = refused(api, resume_path, json.dumps({"value": padding}), status=413)
    assert str(MAX_BODY_BYTES) in body["detail"]
    refused(api, resume_path, json.dumps({"value": padding * 3}), status=413)  # Django's cap


def test_unknown_fields_and_wrong_types_are_422_naming_the_field(api: Api,
                                                                 resume_path: str) -> None:
    body = refused(api, resume_path, json.dumps({"value": 1, "valeu": 2}))
    assert body["detail"][0]["loc"][-1] == "valeu"
    assert "xtra" in body["detail"][0]["msg"] or "not permitted" in body["detail"][0]["msg"]
    body = refused(api, resume_path, json.dumps({"value": 1, "steering": 5}))
    assert body["detail"][0]["loc"][-1] == "steering"
    body = refused(api, resume_path, json.dumps({"steering": "no value"}))
    assert body["detail"][0]["loc"][-1] == "value"
    for raw in ("[1, 2]", '"value"', "null", "3"):
        refused(api, resume_path, raw)
    body = refused(api, "/api/runs", json.dumps({"graph": ["transfer"]}))
    assert body["detail"][0]["loc"][-1] == "graph"


def test_empty_and_non_json_content_types(api: Api, resume_path: str) -> None:
    refused(api, resume_path, b"")
    response = api.client("reviewer").post(resume_path, {"value": "1"})  # multipart form
    assert response.status_code == 422


@pytest.mark.parametrize("params", [
    {"limit": "abc"}, {"limit": 0}, {"limit": 201}, {"offset": -1}, {"offset": 10**20},
    {"status": "sleeping"}, {"created_after": "yesterday"},
    {"created_after": "9999-12-31T23:59:59-23:59"}, {"graph": "a\x00b"},
    {"graph": "x" * 300},
])
def test_bad_query_parameters_are_422(api: Api, params: dict[str, Any]) -> None:
    response = api.get("auditor", "/api/runs", **params)
    assert response.status_code == 422, (params, response.content)
    assert response.json()["detail"][0]["loc"][0] == "query"


def test_a_single_valued_query_parameter_given_twice_is_422(api: Api) -> None:
    response = api.client("auditor").get("/api/runs?graph=a&graph=b")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "graph"]


def test_bad_path_parameters(api: Api) -> None:
    assert api.get("auditor", "/api/runs/a%00b").status_code == 422
    assert api.get("auditor", "/api/runs/" + "x" * 300).status_code == 422
    assert api.get("auditor", "/api/threads/a%00b/checkpoints").status_code == 422
    for path in ["/api/threads/a%0Ab/checkpoints", "/api/nothing%0Ahere"]:
        response = api.get("auditor", path)  # newlines too get a JSON 404, not a page
        assert response.status_code == 404
        assert response["Content-Type"].startswith("application/json")


def test_a_refused_change_leaves_one_audit_row_and_a_refused_body_none(
        api: Api, resume_path: str) -> None:
    api.get("reviewer", "/api/runs", limit=0)  # each token's first use is audited
    api.get("auditor", "/api/runs", limit=0)
    before = AuditEntry.objects.count()
    for body in (b"{", b'{"value": true, "value": false}', b'{"value": NaN}',
                 b'{"value": true, "child_policy": "explode"}', b"[" * 40 + b"]" * 40):
        refused(api, resume_path, body)
    refused(api, resume_path, b" " * (MAX_BODY_BYTES + 1), 413)
    assert AuditEntry.objects.count() == before  # junk in a loop cannot fill the log
    missing = resume_path.replace("/interrupts/", "/interrupts/0")
    refused(api, missing, b'{"value": true}', 404)
    assert AuditEntry.objects.count() == before + 1
    entry = AuditEntry.objects.order_by("-id").first()
    assert entry.action == "api.refused" and entry.actor == api.users["reviewer"]
    assert entry.object_id == missing and entry.detail["status"] == 404
    api.get("auditor", "/api/runs", limit=0)  # refused reads are not audited
    assert AuditEntry.objects.count() == before + 1
