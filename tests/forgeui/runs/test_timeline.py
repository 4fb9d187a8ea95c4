"""The timeline names what each checkpoint is about, shows the whole state and the run's
input, and a tree's history interleaves all its runs."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Interrupt
from forgeui.runs import services, timeline

pytestmark = pytest.mark.django_db(transaction=True)


def pending(thread_id: str) -> dict[str, Interrupt]:
    return {i.node: i for i in Interrupt.objects.of_tree(thread_id).pending()}


def test_a_parallel_step_names_the_node_each_checkpoint_is_about(
        users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "parallel_approvals", {"amount": 40})
    both = pending(run.thread_id)
    services.answer_interrupt(users["reviewer"], both["finance"].pk, {"approved": True})
    services.answer_interrupt(users["reviewer"], both["legal"].pk,
                              {"type": "accept", "args": None})
    entries = timeline.entries(run.thread_id)
    paused = next(e for e in entries if len(e.raised) == 2)
    assert paused.node == "legal, finance"
    [finance] = [e for e in entries if any(r.node == "finance" for r in e.resolved)]
    assert finance.node == "finance"
    [legal] = [e for e in entries if any(r.node == "legal" for r in e.resolved)]
    assert legal.node == "legal"
    assert entries[-1].status == "completed" and entries[-1].node == "decide"
    assert entries[0].input == {"amount": 40}
    assert all(e.input is None for e in entries[1:])
    assert set(entries[-1].state) == {"request", "legal", "finance", "decide"}


def test_the_page_shows_the_input_and_the_full_state(users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "parallel_approvals", {"amount": 41})
    client = Client()
    client.force_login(users["auditor"])
    html = client.get(f"/threads/{run.thread_id}/").content.decode()
    assert "Started with input" in html and "&quot;amount&quot;: 41" in html
    assert "Full state at #" in html
    assert "History of the whole tree" in html


def test_a_trees_history_interleaves_its_runs_and_filters_by_sub_agent(
        users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "supervisor", {"topic": "fees"})
    agents = pending(run.thread_id)
    assert set(agents) == {"find_sources", "draft"}
    services.answer_interrupt(users["reviewer"], agents["draft"].pk,
                              {"type": "accept", "args": None})
    events = timeline.tree_history(run.thread_id)
    assert [e.created_at for e in events] == sorted(e.created_at for e in events)
    spaces = {"/".join(e.namespace) for e in events}
    assert spaces == {"supervisor", "supervisor/research_agent", "supervisor/writer_agent"}
    writer = timeline.tree_history(run.thread_id, "writer_agent")
    assert {"/".join(e.namespace) for e in writer} == {"supervisor/writer_agent"}
    assert any(r.node == "draft" for e in writer for r in e.resolved)
    client = Client()
    client.force_login(users["auditor"])
    page = client.get(f"/threads/{run.thread_id}/tree/?agent=writer_agent")
    html = page.content.decode()
    assert page.status_code == 200 and "supervisor/writer_agent" in html
    assert "supervisor/research_agent" not in html.split("</select>")[1]
    assert client.get("/threads/nope/tree/").status_code == 404


def test_a_change_to_a_large_value_shows_only_what_changed() -> None:
    big = {"notes": ["n" * 100] * 50, "draft": "v1", "old": 1, "title": "t", "by": "me"}
    after = {"notes": [*big["notes"], "added"], "draft": "v2", "title": "t", "by": "me"}
    [change] = timeline.state_diff({"writer": big}, {"writer": after})
    assert change.kind == "changed" and change.after == after
    assert change.what == {"notes": {"appended": ["added"]}, "draft": {"now": "v2"},
                           "removed keys": ["old"]}
    [small] = timeline.state_diff({"k": [1, 2]}, {"k": [1, 3]})
    assert small.what is None and (small.before, small.after) == ([1, 2], [1, 3])
