"""Layout in a real browser at 1440x900 and 390x844: long values wrap, every inbox column
shows, a phone gets the decision and the first row in its first screen, focus follows
errors, a graph has its own page, and the run's drawing tells running, failed and
cancelled nodes apart."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import LiveServer, Login

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
# Unbroken values as they come: a token, an IBAN, a URL and a hash, each 200 characters.
TOKEN = "tok_" + "Q" * 196
IBAN = "DE" + "7" * 198
URL = "https://example.com/" + "p" * 180
HASH = "f" * 200
THREAD = "long-thread-" + "t" * 188
SCROLLS = "() => document.documentElement.scrollWidth > innerWidth"


@pytest.fixture(scope="module")
def long_values(forge: LiveServer) -> dict[str, str]:
    """Pages whose payload, run input, answer, note and thread id are long unbroken values."""
    payload = {"token": TOKEN, "iban": IBAN, "url": URL, "hash": HASH}
    asked = forge.start("custom", {"question": "Pay " + IBAN + "?", "payload": payload})[0]
    answered = forge.api("POST", "/api/runs", {"graph": "transfer", "thread_id": THREAD,
                                               "input": {"to": IBAN, "ref": URL}})
    to_answer = forge.pending(answered["thread_id"], at_least=1)[0]
    forge.api("POST", f"/api/interrupts/{to_answer['id']}/resume",
              {"value": {"ok": TOKEN}, "steering": HASH}, who="reviewer")
    tree = forge.start("supervisor", {"topic": URL})[0]
    forge.api("POST", "/api/steering", {"run_id": tree["run_id"], "text": TOKEN})
    return {"inbox": "/", "interrupt": f"/interrupts/{asked['id']}/",
            "answered": f"/interrupts/{to_answer['id']}/",
            "run": f"/runs/{asked['run_id']}/", "tree": f"/runs/{tree['run_id']}/",
            "timeline": f"/threads/{THREAD}/", "tree history": f"/threads/{THREAD}/tree/",
            "decisions": "/audit/decisions/", "audit": "/audit/", "runs": "/runs/",
            "graph": "/graphs/custom/"}


def test_long_unbroken_values_never_make_a_page_scroll_sideways(
        forge: LiveServer, login: Login, long_values: dict[str, str]) -> None:
    page = login("supervisor")
    wide = []
    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        for name, path in long_values.items():
            page.goto(forge.url + path)
            page.wait_for_load_state("load")
            for details in page.locator("main details:not([open]) > summary").all():
                if details.is_visible():
                    details.click()  # what is folded must fit too
            if page.evaluate(SCROLLS):
                wide.append(f"{name} at {size['width']}")
    page.set_viewport_size(PHONE)
    page.goto(forge.url + long_values["interrupt"])
    page.screenshot(path="/tmp/forge-layout-interrupt-phone.png", full_page=True)
    assert wide == []
    expect(page.locator("main")).to_contain_text(TOKEN[:40])  # shown, wrapped, not cut


def test_every_inbox_column_shows_at_1440(forge: LiveServer, login: Login,
                                          long_values: dict[str, str]) -> None:
    page = login("reviewer")
    page.wait_for_selector("#inbox-rows tr.row")
    box = page.locator(".table-wrap").bounding_box()
    headers = page.locator("table.inbox thead th")
    assert headers.count() == 10
    for index in range(headers.count()):
        cell = headers.nth(index).bounding_box()
        assert cell is not None and box is not None
        assert cell["x"] >= box["x"] and cell["x"] + cell["width"] <= box["x"] + box["width"] + 1
    expect(page.get_by_role("columnheader", name="Checkpoint")).to_be_in_viewport()
    assert not page.evaluate("() => { const w = document.querySelector('.table-wrap');"
                             " return w.scrollWidth > w.clientWidth; }")
    page.screenshot(path="/tmp/forge-layout-inbox.png")


def test_a_phone_shows_the_decision_before_a_long_context(forge: LiveServer,
                                                         login: Login) -> None:
    context = {f"field_{n}": "a paragraph of background " * 6 for n in range(25)}
    asked = forge.start("custom", {"question": "Refund order 4411?", "context": context,
                                   "payload": {"amount": 120, "payee": "ACME"}})[0]
    page = login("reviewer", f"/interrupts/{asked['id']}/", live=False)
    page.set_viewport_size(PHONE)
    page.reload()
    approve = page.get_by_role("button", name="Approve")
    top = approve.bounding_box()
    assert top is not None and top["y"] + top["height"] <= PHONE["height"], top
    context_top = page.locator("section.context").bounding_box()
    assert context_top is not None and context_top["y"] > top["y"]
    page.screenshot(path="/tmp/forge-layout-decision-phone.png")
    page.set_viewport_size(DESKTOP)  # side by side again: the answer beside the question
    answer = page.locator("section.answer").bounding_box()
    question = page.locator("section.question").bounding_box()
    assert answer is not None and question is not None
    assert answer["x"] > question["x"] + question["width"] and answer["y"] == question["y"]


def test_a_phone_shows_the_inbox_s_first_row_in_the_first_screen(
        forge: LiveServer, login: Login, long_values: dict[str, str]) -> None:
    forge.start("custom", {"question": "Reorder paper for the phone office?"})
    page = login("reviewer")
    page.set_viewport_size(PHONE)
    page.reload()
    first = page.locator("#inbox-rows tr.row").first
    buttons = first.locator(".row-buttons").bounding_box()
    assert buttons is not None and buttons["y"] + buttons["height"] <= PHONE["height"], buttons
    page.screenshot(path="/tmp/forge-layout-inbox-phone.png")
    search = page.get_by_label("Search", exact=True)
    expect(search).to_be_hidden()  # folded, one tap away
    page.get_by_text("Filter and sort").click()
    search.fill("paper")
    search.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]q=paper(&|$)"), timeout=15_000)
    expect(page.locator("#inbox-rows tr.row")).to_have_count(1)
    page.reload()
    expect(page.get_by_label("Search", exact=True)).to_be_visible()  # in use: unfolded


def test_focus_goes_to_the_first_error_after_a_refused_form(forge: LiveServer,
                                                            login: Login) -> None:
    approvals = forge.start("parallel_approvals", {"item": "desks", "amount": 40})
    approvals = forge.pending(approvals[0]["root_thread_id"], at_least=2)
    finance = next(i for i in approvals if i["node"] == "finance")
    page = login("reviewer", f"/interrupts/{finance['id']}/", live=False)
    page.get_by_label("approved").select_option("true")
    page.get_by_label("limit").fill("-1")  # the one field in error
    page.get_by_role("button", name="Send answer").click()
    page.locator(".field.has-error").first.wait_for()
    expect(page.get_by_label("limit")).to_be_focused()
    expect(page.get_by_label("limit")).to_have_value("-1")
    page = login("supervisor", "/graphs/transfer/", live=False)  # no field: its message
    page.get_by_label("Input as JSON").fill('{"amount": 12,')
    page.get_by_role("button", name="Start run").click()
    alert = page.locator("#start-run [role=alert]")
    expect(alert).to_be_focused()
    expect(page.get_by_label("Input as JSON")).to_have_value('{"amount": 12,')


def test_a_graph_page_draws_the_graph_and_starts_a_run(forge: LiveServer,
                                                       login: Login) -> None:
    page = login("supervisor", "/runs/?start=transfer", live=False)
    page.get_by_role("link", name="See how transfer is drawn").click()
    expect(page).to_have_url(f"{forge.url}/graphs/transfer/")
    drawing = page.locator("svg.graph-svg")
    expect(drawing.locator("g[data-node]")).to_have_count(2)
    expect(drawing).to_contain_text("ask")
    page.screenshot(path="/tmp/forge-layout-graph.png", full_page=True)
    page.get_by_label("Input as JSON").fill('{"amount": 7, "to": "graph page"}')
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(f"{forge.url}/runs/**")
    expect(page.locator("svg.graph-svg g[data-node=ask]")).to_have_attribute(
        "data-state", "paused", timeout=15_000)
    page.goto(f"{forge.url}/graphs/no-such-graph/")
    expect(page.locator("main")).to_contain_text("No graph is registered as “no-such-graph”")


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    """A file whose presence lets the blocking graph's node finish; opened at the end."""
    opened = tmp_path / "gate"
    yield opened
    opened.write_text("open")


def test_the_run_drawing_tells_running_failed_and_cancelled_apart(
        forge: LiveServer, login: Login, gate: Path, tmp_path: Path) -> None:
    blocking = forge.api("POST", "/api/runs", {"graph": "blocking", "input": {
        "gate": str(gate), "entered": str(tmp_path / "entered"),
        "ledger": str(tmp_path / "ledger")}})
    outage = tmp_path / "down"
    outage.write_text("x")
    flaky = forge.api("POST", "/api/runs", {"graph": "flaky",
                                           "input": {"fail_while": str(outage)}})
    tree = forge.start("supervisor", {"topic": "drawn"})
    tree = forge.pending(tree[0]["root_thread_id"], at_least=2)
    research = next(i for i in tree if i["sub_agent_id"] == "research_agent")
    forge.api("POST", f"/api/runs/{research['run_id']}/cancel")
    page = login("auditor", "/runs/", live=False)
    seen = {"running": (blocking["run_id"], "charge"), "failed": (flaky["run_id"], "fetch"),
            "cancelled": (tree[0]["run_id"], "research_agent/find_sources")}
    for state, (run_id, node) in seen.items():
        drawn = shown_state(page, f"{forge.url}/runs/{run_id}/", node, state)
        expect(drawn.locator(".graph-state")).to_have_text(state)  # a word, not only a colour
    page.screenshot(path="/tmp/forge-layout-drawing.png", full_page=True)


def shown_state(page: Any, url: str, node: str, state: str) -> Any:
    """The node's group in the run's drawing once it shows ``state`` (runs move on)."""
    page.goto(url)
    drawn = page.locator(f'svg.graph-svg g[data-node="{node}"]')
    for _ in range(30):
        if drawn.get_attribute("data-state") == state:
            return drawn
        page.wait_for_timeout(300)
        page.reload()
    raise AssertionError(f"{node} never drawn {state} at {url}")


def test_a_note_reaches_a_paused_sub_agent_without_answering_it(forge: LiveServer,
                                                                login: Login) -> None:
    tree = forge.start("supervisor", {"topic": "notes"})
    tree = forge.pending(tree[0]["root_thread_id"], at_least=2)
    writer = next(i for i in tree if i["sub_agent_id"] == "writer_agent")
    page = login("supervisor", f"/runs/{writer['run_id']}/")
    panel = page.locator(f"#run-{writer['run_id']} .pending-interrupt")
    panel.get_by_text("Add a note without answering").click()
    panel.get_by_label("Steering note for writer_agent; the question stays open").fill(
        "Cite the finance ledger.")
    page.evaluate("() => { window.redraws = 0; document.addEventListener("
                  "'forge:refreshed', () => { window.redraws += 1; }); }")
    panel.get_by_role("button", name="Add note").click()
    # The note is saved once the page says so; leaving sooner would abort its request.
    expect(panel.get_by_role("status")).to_contain_text("Saved as a steering note")
    # The saved note redraws the tree; the message saying so stays.
    page.wait_for_function("() => window.redraws > 0")
    expect(panel.get_by_role("status")).to_contain_text("Saved as a steering note")
    assert forge.api("GET", f"/api/interrupts/{writer['id']}")["status"] == "pending"
    page.goto(f"{forge.url}/interrupts/{writer['id']}/")
    notes = page.locator("section.context ul.notes")
    expect(notes).to_contain_text("Cite the finance ledger.", timeout=15_000)
    expect(page.get_by_role("button", name="Accept")).to_be_visible()  # still to answer


def test_headings_never_skip_a_level(forge: LiveServer, login: Login,
                                     long_values: dict[str, str]) -> None:
    page = login("auditor", "/", live=False)
    skips = {}
    for name in ("timeline", "tree history", "interrupt", "answered", "tree", "graph"):
        page.goto(forge.url + long_values[name])
        levels = page.evaluate("() => [...document.querySelectorAll('main h1, main h2, main h3,"
                               " main h4, main h5, main h6')].map(h => Number(h.tagName[1]))")
        jumps = [b for a, b in zip([0, *levels], levels, strict=False) if b > a + 1]
        if jumps:
            skips[name] = levels
    assert skips == {}
