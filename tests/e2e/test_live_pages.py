"""Live pages that never destroy what a person types, in headless Chromium.

The run tree, the interrupt page and the thread timeline follow the run through the
websocket: each change is morphed into the page, so a field with focus or typed text
stays as it is while everything around it moves on. Every refresh here is a real one,
caused through the API by another user, and counted in the page (``forge:refreshed``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from forgeui.demo.graphs import GRAPHS

from .conftest import LiveServer, Login, Seed, serve

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
LIVE_MS = 10_000


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[LiveServer]:
    graphs = json.dumps({**GRAPHS, "chat": "tests.forgeui.graphs:chat",
                         "blocking": "tests.forgeui.graphs:blocking"})
    with serve(tmp_path_factory.mktemp("live"), seeded, FORGE_GRAPHS=graphs) as server:
        yield server


def count_refreshes(page: Any, part: str) -> None:
    """From now on, ``window.refreshes`` counts the morphs of the live part ``part``."""
    page.evaluate("""part => { window.refreshes = 0;
        document.addEventListener('forge:refreshed', e => {
          if (e.target.id === part) window.refreshes += 1; }); }""", part)


def refreshed(page: Any, times: int) -> None:
    page.wait_for_function("n => window.refreshes >= n", arg=times, timeout=LIVE_MS)


def mark_no_reload(page: Any) -> None:
    page.evaluate("window.notReloaded = true")


def still_not_reloaded(page: Any) -> bool:
    return bool(page.evaluate("window.notReloaded === true"))


def by_node(pending: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["node"]: item for item in pending}


@pytest.mark.parametrize("size", SIZES)
def test_typing_in_a_siblings_reply_survives_ten_tree_refreshes_and_sends(
        forge: LiveServer, login: Login, size: str) -> None:
    started = forge.api("POST", "/api/runs", {"graph": "supervisor", "input": {"topic": size}})
    asked = by_node(forge.pending(started["thread_id"], at_least=2))
    research, writer = asked["find_sources"], asked["draft"]
    page = login("supervisor", f"/runs/{started['run_id']}/")
    page.set_viewport_size(SIZES[size])
    count_refreshes(page, "run-tree")
    mark_no_reload(page)
    # A note typed into the sibling that is redrawn, then left: typed, no longer focused.
    aside = page.locator(f"#steer-{research['id']}")
    aside.fill("Prefer the ledger")
    reply = page.locator(f"#respond-{writer['id']}")
    reply.click()
    page.keyboard.type("Cite the ledger")
    claimed = page.locator(f"#run-{research['run_id']} .claimed-by")
    for turn in range(1, 11):  # the research sibling is claimed and released: ten redraws
        forge.api("POST", f"/api/interrupts/{research['id']}/"
                          f"{'claim' if turn % 2 else 'release'}")
        refreshed(page, turn)
        if turn % 2:
            expect(claimed).to_have_text("supervisor")
        else:
            expect(claimed).to_have_count(0)
        page.keyboard.type(f" {turn}")  # the box kept its focus: the keys land in it
    typed = "Cite the ledger 1 2 3 4 5 6 7 8 9 10"
    expect(reply).to_have_value(typed)
    expect(reply).to_be_focused()
    expect(aside).to_have_value("Prefer the ledger")
    assert still_not_reloaded(page)
    page.locator(f"#panel-{writer['id']}").get_by_role("button", name="Send response").click()
    # Recorded, then the redrawn tree no longer asks it (the sibling's note still there).
    expect(page.locator(f"#panel-{writer['id']}")).to_have_count(0, timeout=LIVE_MS)
    expect(page.locator(".notice-error")).to_have_count(0)
    expect(aside).to_have_value("Prefer the ledger")
    answered = forge.api("GET", f"/api/interrupts/{writer['id']}")
    assert answered["status"] == "answered" and answered["answered_by"] == "supervisor"
    entries = forge.api("GET", f"/api/audit?action=answer&object={writer['id']}")["items"]
    [sent] = [e for e in entries if e["action"] == "answer"]
    assert sent["detail"]["value"] == {"type": "respond", "args": typed}


def test_an_inbox_row_being_typed_into_is_never_replaced(forge: LiveServer,
                                                         login: Login) -> None:
    [asked] = forge.start("transfer", {"amount": 5, "memo": "rowtyping"})
    page = login("reviewer", "/?q=rowtyping")
    mark_no_reload(page)
    row = page.locator(f"#int-{asked['id']}")
    picked = row.locator("input[name=ids]")
    picked.check()
    note = row.locator(".row-note")
    note.fill("Ask finance")
    forge.api("POST", f"/api/interrupts/{asked['id']}/assign",
              {"users": ["reviewer", "supervisor"], "groups": []})  # still the reviewer's
    expect(row.locator(".tag-assigned")).to_be_visible(timeout=LIVE_MS)
    expect(picked).to_be_checked()
    expect(note).to_have_value("Ask finance")
    forge.api("POST", f"/api/interrupts/{asked['id']}/claim")  # now someone else's
    expect(row.locator(".tag-claim")).to_have_text("claimed by supervisor", timeout=LIVE_MS)
    forge.api("POST", f"/api/interrupts/{asked['id']}/release")
    expect(row.locator(".tag-claim")).to_have_count(0, timeout=LIVE_MS)
    expect(note).to_have_value("Ask finance")
    forge.api("POST", f"/api/interrupts/{asked['id']}/resume", {"value": True})
    expect(row.locator(".kept-note")).to_be_visible(timeout=LIVE_MS)  # answered: it stays
    expect(note).to_have_value("Ask finance")
    assert still_not_reloaded(page)


@pytest.mark.parametrize("size", SIZES)
def test_the_interrupt_page_says_who_answered_and_keeps_the_typed_note(
        forge: LiveServer, login: Login, size: str) -> None:
    [asked] = forge.start("transfer", {"amount": 120, "to": size})
    path = f"/interrupts/{asked['id']}/"
    page = login("reviewer", path)
    page.set_viewport_size(SIZES[size])
    mark_no_reload(page)
    expect(page.locator(".page-head .status")).to_have_text("pending")
    note = page.locator(f"#steer-{asked['id']}")
    note.fill("Check the payee first")
    other = login("supervisor", path)
    other.get_by_role("button", name="Approve").click()
    other.wait_for_url(lambda url: not url.endswith(path))
    stale = page.locator(".stale")
    expect(stale).to_contain_text("Already answered by supervisor at", timeout=LIVE_MS)
    expect(page.locator(".page-head .status")).to_have_text("answered")
    expect(page.locator(".answers")).to_contain_text("supervisor")
    expect(note).to_have_value("Check the payee first")
    expect(page.locator(".kept-note")).to_be_visible()
    assert still_not_reloaded(page)
    page.locator(".answer-form").get_by_role("button", name="Approve").click()  # too late
    keep = page.locator(f"#keep-{asked['id']}")
    expect(keep).to_have_value("Check the payee first")  # the 409 panel offers to keep it


def test_a_refused_answer_keeps_the_note_through_a_late_refresh(
        forge: LiveServer, login: Login) -> None:
    """The reviewer sends an answer with a note just after someone else's answer landed,
    and the page's live refresh for that answer arrives after the refusal: the note
    handed back in the refusal stays in view. The test holds the page's live reads to
    make that order certain."""
    [asked] = forge.start("transfer", {"amount": 130, "to": "late refresh"})
    path = f"/interrupts/{asked['id']}/"
    page = login("reviewer", path)
    mark_no_reload(page)
    held: list[Any] = []
    holding = [True]

    def hold_live_reads(route: Any) -> None:
        if holding[0] and route.request.headers.get("x-forge-live"):
            held.append(route)
        else:
            route.continue_()

    page.route(f"**{path}", hold_live_reads)
    page.locator(f"#steer-{asked['id']}").fill("Check the payee first")
    forge.api("POST", f"/api/interrupts/{asked['id']}/resume", {"value": True},
              who="supervisor")
    for _ in range(LIVE_MS // 100):
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "the answer never made the page read itself again"
    page.locator(".answer-form").get_by_role("button", name="Approve").click()
    keep = page.locator(f"#keep-{asked['id']}")
    expect(keep).to_have_value("Check the payee first")
    count_refreshes(page, "answer-live")
    holding[0] = False
    for route in held:
        route.continue_()
    refreshed(page, 1)
    expect(page.locator(".answers")).to_contain_text("supervisor")
    expect(keep).to_have_value("Check the payee first")
    expect(page.locator(".kept-note")).to_be_visible()
    assert still_not_reloaded(page)


def test_a_forks_timeline_and_run_page_follow_the_fork_without_reloading(
        forge: LiveServer, login: Login) -> None:
    [asked] = forge.start("chat", {"messages": []})
    page = login("reviewer", f"/threads/{asked['thread_id']}/")
    page.locator(".entry").last.get_by_role("button", name="Fork from here").click()
    page.wait_for_url(lambda url: asked["thread_id"] not in url)
    page.wait_for_selector("#live-status[data-state=on]")
    fork_thread = page.url.rstrip("/").rsplit("/", 1)[1]
    [copy] = forge.pending(fork_thread, at_least=1)
    mark_no_reload(page)
    entries = page.locator("#timeline .entry")
    shown = entries.count()
    forge.api("POST", f"/api/interrupts/{copy['id']}/resume", {"value": "hello"},
              who="supervisor")
    expect(page.locator("#timeline .event-answer")).to_contain_text("supervisor",
                                                                    timeout=LIVE_MS)
    assert entries.count() > shown  # the steps after the answer, up to the next pause
    assert still_not_reloaded(page)

    [second] = forge.pending(fork_thread, at_least=1)
    page.goto(f"{forge.url}/runs/{second['run_id']}/")
    page.wait_for_selector("#live-status[data-state=on]")
    mark_no_reload(page)
    expect(page.locator(f"#panel-{second['id']}")).to_be_visible()
    forge.api("POST", f"/api/interrupts/{second['id']}/resume", {"value": "again"},
              who="supervisor")
    [third] = forge.pending(fork_thread, at_least=1, timeout=LIVE_MS / 1000)
    assert third["id"] != second["id"]
    expect(page.locator(f"#panel-{third['id']}")).to_be_visible(timeout=LIVE_MS)
    expect(page.locator(f"#panel-{second['id']}")).to_have_count(0)
    assert still_not_reloaded(page)


def test_a_run_page_shows_a_working_node_as_running_then_done(
        forge: LiveServer, login: Login, tmp_path: Path) -> None:
    files = {name: str(tmp_path / name) for name in ("ledger", "entered", "gate")}
    started = forge.api("POST", "/api/runs", {"graph": "blocking", "input": files})
    page = login("supervisor", f"/runs/{started['run_id']}/")
    mark_no_reload(page)
    status = page.locator(f"#run-{started['run_id']} .node-head .status")
    expect(status).to_have_text("running", timeout=LIVE_MS)
    Path(files["gate"]).touch()  # the node finishes; the run completes
    expect(status).to_have_text("completed", timeout=LIVE_MS)
    assert still_not_reloaded(page)


def test_a_reject_counting_down_keeps_its_undo_through_a_redraw(
        forge: LiveServer, login: Login) -> None:
    [asked] = forge.start("transfer", {"amount": 9, "memo": "undo"})
    page = login("reviewer", f"/interrupts/{asked['id']}/")
    page.get_by_role("button", name="Reject").click()
    undo = page.locator(".undo-bar").get_by_role("button", name="Undo")
    expect(undo).to_be_visible()
    forge.api("POST", f"/api/interrupts/{asked['id']}/assign",
              {"users": ["reviewer", "supervisor"], "groups": []})
    expect(page.locator(".assignment")).to_contain_text("reviewer, supervisor",
                                                        timeout=LIVE_MS)
    undo.click()  # the bar survived the redraw, so the reject can still be taken back
    expect(page.locator(".undo-bar")).to_have_count(0)
    assert forge.api("GET", f"/api/interrupts/{asked['id']}")["status"] == "pending"


def test_a_refused_form_keeps_its_errors_through_a_live_refresh(
        forge: LiveServer, login: Login) -> None:
    """The reviewer's answer is refused (a field out of range); while they fix it, the
    page's live parts are read again (here: its socket reconnects from an old cursor and
    is told the interrupt changed): the refused field, its message and its typed value
    stay until the reviewer sends again."""
    started = forge.start("parallel_approvals", {"item": "lamps", "amount": 40})
    finance = by_node(forge.pending(started[0]["root_thread_id"], at_least=2))["finance"]
    page = login("reviewer", f"/interrupts/{finance['id']}/")
    page.get_by_label("approved").select_option("true")
    page.get_by_label("limit").fill("-1")
    page.get_by_role("button", name="Send answer").click()
    refused = page.locator(".field.has-error")
    expect(refused).to_have_count(1)
    expect(page.get_by_label("limit")).to_be_focused()
    count_refreshes(page, "answer-live")
    socket = 'document.querySelector("[ws-connect]")["htmx-internal-data"].webSocket'
    page.evaluate(f"() => {socket}.socket.close(4000)")
    page.evaluate("() => document.getElementById('interrupt-changed')"
                  ".setAttribute('data-event-id', '0')")
    page.evaluate(f"() => {socket}.init()")
    refreshed(page, 1)
    expect(refused).to_have_count(1)
    expect(page.get_by_label("limit")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("limit")).to_have_value("-1")
    page.get_by_label("limit").fill("5")  # fixed and sent: taken, and on to the next item
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator("#notices")).to_contain_text("was recorded")
    expect(refused).to_have_count(0)
    assert [i["node"] for i in forge.pending(started[0]["root_thread_id"])] == ["legal"]
