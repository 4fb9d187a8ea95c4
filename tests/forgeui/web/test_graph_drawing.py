"""The run page draws its graph server-side as SVG, paused nodes highlighted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.demo import graphs as examples
from forgeui.models import Run
from forgeui.runs import services
from forgeui.web import graphsvg
from runtime import DurableExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def node_classes(svg: str) -> dict[str, str]:
    return dict((path, classes.strip()) for classes, path in
                re.findall(r'<g class="graph-(?:node|agent) ?([^"]*)" data-node="([^"]+)"', svg))


def test_sub_agents_are_nested_boxes_and_the_paused_nodes_stand_out(
        users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "supervisor", {"topic": "q3"})
    client = Client()
    client.force_login(users["auditor"])
    response = client.get(f"/runs/{started.run_id}/")
    page = response.content.decode()
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    classes = node_classes(svg)
    assert classes == {
        "plan": "is-done", "research_agent": "is-waiting",
        "research_agent/find_sources": "is-paused", "writer_agent": "is-waiting",
        "writer_agent/draft": "is-paused", "summarize": ""}
    assert "<script" not in svg and "style=" not in svg and not re.search(r"\son\w+=", svg)
    assert "paused at research_agent/find_sources, writer_agent/draft" in svg
    # plan routes to both agents (taken), and both route on to summarize (not yet)
    assert svg.count('class="graph-edge"') == 2 and svg.count("is-routed") == 2
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_a_finished_run_is_drawn_done_and_a_chain_without_routes_in_order() -> None:
    marks = graphsvg.Marks(done=frozenset({("ask",), ("execute",)}))
    svg = graphsvg.draw(examples.transfer, marks)
    assert node_classes(svg) == {"ask": "is-done", "execute": "is-done"}
    assert svg.count('class="graph-edge"') == 1 and "is-routed" not in svg
    nested = graphsvg.draw(examples.nested, graphsvg.Marks(
        paused=frozenset({("team_agent", "specialist_agent", "investigate")})))
    assert node_classes(nested)["team_agent"] == "is-waiting"
    assert node_classes(nested)["team_agent/specialist_agent/investigate"] == "is-paused"


def test_names_are_escaped() -> None:
    odd = DurableExecutor(nodes=[("<b>x</b>", lambda x: x)], name="a&b")
    svg = graphsvg.draw(odd, graphsvg.Marks())
    assert "<b>" not in svg and "&lt;b&gt;x&lt;/b&gt;" in svg and "a&amp;b" in svg


def run_page_svg(client: Client, run_id: str) -> str:
    page = client.get(f"/runs/{run_id}/").content.decode()
    return page[page.index("<svg"):page.index("</svg>") + 6]


def test_a_failed_node_is_drawn_failed_in_words_too(users: dict[str, User],
                                                  tmp_path: Path) -> None:
    outage = tmp_path / "down"
    outage.write_text("x")
    started = services.start_run(users["supervisor"], "flaky", {"fail_while": str(outage)})
    client = Client()
    client.force_login(users["auditor"])
    svg = run_page_svg(client, started.run_id)
    assert node_classes(svg) == {"fetch": "is-failed", "finish": ""}
    assert re.search(r'data-node="fetch" data-state="failed">.*?class="graph-state">failed<', svg)
    assert "failed at fetch" in svg


def test_a_cancelled_sub_agent_s_node_is_drawn_cancelled(users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "supervisor", {"topic": "q3"})
    research = Run.objects.get(sub_agent_id="research_agent")
    services.cancel_run(users["supervisor"], research.run_id)
    client = Client()
    client.force_login(users["auditor"])
    classes = node_classes(run_page_svg(client, started.run_id))
    assert classes["research_agent/find_sources"] == "is-cancelled"
    assert classes["writer_agent/draft"] == "is-paused"


def test_running_nodes_are_marked_apart_from_paused_and_done() -> None:
    marks = graphsvg.Marks(done=frozenset({("prepare",)}), running=frozenset({("charge",)}))
    svg = graphsvg.draw(_chain(), marks)
    assert node_classes(svg) == {"prepare": "is-done", "charge": "is-running", "finish": ""}
    assert 'class="graph-state">running<' in svg and "running at charge" in svg
    assert svg.count('class="graph-state"') == 1  # done is drawn by colour and legend only


def _chain() -> DurableExecutor:
    return DurableExecutor(nodes=[("prepare", lambda x: x), ("charge", lambda x: x),
                                  ("finish", lambda x: x)], name="chain")
