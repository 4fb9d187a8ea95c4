"""The request's shapes and presentation, without a server: schemas, decisions, diffs."""

from __future__ import annotations

import jsonschema
import pytest

from forgeui.models.requests import REQUEST_GRAPH
from forgeui.requests import graph, present, shapes
from forgeui.runs import registry
from forgeui.runs.exceptions import InvalidRequest

ACTIONS = [{"name": "send", "args": {"to": "a"},
            "args_schema": {"type": "object", "required": ["to"],
                            "properties": {"to": {"type": "string"}}}},
           {"name": "ask", "args": {}, "decisions": ["respond"]}]


def test_the_registry_knows_the_request_graph_by_its_own_name() -> None:
    assert registry.REQUEST_GRAPH == graph.GRAPH == graph.request_graph.name == REQUEST_GRAPH


def test_the_answer_schema_takes_exactly_what_the_actions_offer() -> None:
    schema = shapes.answer_schema(ACTIONS)
    good = {"decisions": [{"type": "edit", "args": {"to": "b"}},
                          {"type": "respond", "message": "yes"}], "message": "ok"}
    jsonschema.validate(good, schema)
    for bad in ({"decisions": [{"type": "approve"}, {"type": "approve"}]},
                {"decisions": [{"type": "edit", "args": {}}, {"type": "respond",
                                                               "message": "x"}]},
                {"decisions": [{"type": "approve"}, {"type": "respond", "message": ""}]},
                {"decisions": [{"type": "approve"}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_check_decisions_reports_every_bad_field() -> None:
    with pytest.raises(shapes.DecisionsRefused) as refused:
        shapes.check_decisions(ACTIONS, [{"type": "edit", "args": {"to": 1}},
                                         {"type": "approve"}])
    assert [e["loc"] for e in refused.value.errors] == [
        ["body", "decisions", 0, "args", "to"], ["body", "decisions", 1, "type"]]


def test_a_deadline_default_must_be_offered_by_every_action() -> None:
    with pytest.raises(InvalidRequest):
        shapes.default_for(ACTIONS, "reject")
    assert shapes.default_for(ACTIONS[:1], "reject")["decisions"][0]["type"] == "reject"


def test_diffs_from_old_and_new_and_from_a_unified_diff() -> None:
    lines, path = present.proposed_diff({"path": "a.txt", "old": "x\ny\n", "new": "x\nz\n"})
    assert path == "a.txt"
    assert [(line.kind, line.text) for line in lines] == [
        ("hunk", "@@ -1,2 +1,2 @@"), ("ctx", " x"), ("del", "-y"), ("add", "+z")]
    lines, _ = present.proposed_diff({"diff": "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"})
    assert [line.kind for line in lines] == ["hunk", "del", "add"]
    assert present.proposed_diff({"path": "a.txt"}) == ([], "")
