"""The pages of a forge graph's paused run read its head, never its history: the
interrupt page's latest state and the run page's drawing (completed nodes, routes taken)
cost the same statements, and parse the same stored texts, after 200 steps as after 10,
and rebuild no checkpoint from the thread's records."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from forgeui.models import Interrupt
from forgeui.runs import decision_context, registry, services
from forgeui.store import DjangoCheckpointStore
from forgeui.web import runtree
from runtime import Checkpoint, DurableExecutor, NodeContext, _records
from runtime.checkpoint import RunBookkeeping

pytestmark = pytest.mark.django_db(transaction=True)


def count(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "n": state["n"] + 1}


def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {**state, "answer": ctx.interrupt({"question": "go on?", "n": state["n"]})}


looping = DurableExecutor(
    nodes=[("count", count), ("ask", ask)],
    edges={"count": lambda out, ctx=None: "count" if out["n"] < out["steps"] else "ask"},
    name="looping")


@pytest.fixture
def registered(settings: Any) -> Iterator[None]:
    registry.clear()
    settings.FORGE_GRAPHS = {**settings.FORGE_GRAPHS,
                             "looping": f"{__name__}:looping"}
    yield
    registry.clear()




@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each stored text (a head, a record) parsed to read checkpoints."""
    seen: list[int] = []
    real = _records.loads

    def counted(text: str) -> Any:
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(_records, "loads", counted)
    return seen


class Costs:
    """What one page cost: statements, stored texts parsed and their characters."""

    def __init__(self, parsed: list[int]) -> None:
        self.parsed, self.statements, self.texts, self.chars = parsed, 0, 0, 0

    def measure(self, fn: Callable[[], Any]) -> Any:
        del self.parsed[:]
        with CaptureQueriesContext(connection) as captured:
            result = fn()
        self.statements, self.texts = len(captured.captured_queries), len(self.parsed)
        self.chars = sum(self.parsed)
        return result


def page_costs(viewer: Client, supervisor: User, steps: int,
               parsed: list[int]) -> tuple[list[Costs], str, str]:
    """Start a run that counts ``steps`` times, then pauses: what its interrupt page and
    its run page cost (each read once before, so caches are warm), and the two pages."""
    run = services.start_run(supervisor, "looping", {"n": 0, "steps": steps})
    pending = Interrupt.objects.get(run_id=run.run_id, status="pending")
    costs, pages = [], []
    for url in (f"/interrupts/{pending.pk}/", f"/runs/{run.run_id}/"):
        viewer.get(url)
        costs.append(Costs(parsed))
        response = costs[-1].measure(lambda url=url: viewer.get(url))
        assert response.status_code == 200
        pages.append(response.content.decode())
    return costs, pages[0], pages[1]


def test_the_pages_of_a_long_run_read_its_head_not_its_history(
        users: dict[str, User], registered: None, replays: list[str],
        parsed: list[int]) -> None:
    viewer = Client()
    viewer.force_login(users["auditor"])
    short, _, _ = page_costs(viewer, users["supervisor"], 10, parsed)
    long, asked, shown = page_costs(viewer, users["supervisor"], 200, parsed)
    assert replays == []  # no page rebuilt a checkpoint from the thread's records
    for early, late in zip(short, long, strict=True):
        assert (early.statements, early.texts) == (late.statements, late.texts)
        assert late.chars <= early.chars + 100, (early.chars, late.chars)  # digits of n
    assert "Latest state (1 key)" in asked and "&quot;n&quot;: 200" in asked
    svg = shown[shown.index("<svg"):shown.index("</svg>")]
    assert re.search(r'class="graph-node is-done" data-node="count"', svg)
    # count routed on to itself and to ask: both routes are drawn as taken, none as a
    # stub still to pick its next node.
    assert svg.count('class="graph-edge"') == 2 and "is-routed" not in svg


def test_a_head_saved_before_heads_kept_outputs_is_read_from_its_history() -> None:
    store = DjangoCheckpointStore()
    common: dict[str, Any] = {"thread_id": "kept-before", "interrupt_payload": None,
                              "pending_input": None, "run_id": "run-before",
                              "graph": "looping", "status": "completed"}
    first = Checkpoint(id="cp-1", node="count", created_at=1, step=0, **common,
                       engine=RunBookkeeping(tasks=[{"id": "t0", "node": "count",
                                                     "status": "done"}]),
                       state={"count": {"n": 1}}, history=[{"node": "count",
                                                            "output": {"n": 1}}])
    store.save_sync(first)
    store.save_sync(Checkpoint(
        id="cp-2", parent_id="cp-1", node="ask", created_at=2, step=1, **common,
        engine=RunBookkeeping(tasks=[{"id": "t1", "node": "ask", "status": "done"}]),
        state={"count": {"n": 1}}, history=[
            {"node": "count", "output": {"n": 1}},
            {"node": "ask", "output": {"cancelled": True}, "cancelled": True}]))
    head = store.load_head_sync("kept-before")
    assert head is not None and head.engine.outputs is None and head.engine.routes is None
    assert decision_context.latest_state(head) == {"count": {"n": 1}}
    assert runtree._completed(store, head) == {("count",)}
    assert runtree._routes_taken(store, head) == {("count", "ask")}
