"""The inbox in headless Chromium against a live daphne (see ``conftest.py``).

Each test starts its own runs through the API (as an integrating script would), so the
interrupts it watches are new to every open page and arrive over the websocket.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from playwright.sync_api import expect

from .conftest import LiveServer, Login

CURRENT = re.compile(r"\bcurrent\b")  # the keyboard's row
# How fast a row arrives is measured by bench/inbox_bench.py; here only that it does, live.
ARRIVAL_MS = 10_000


def row(page: Any, interrupt_id: str) -> Any:
    return page.locator(f"#int-{interrupt_id}")


def replay_after(page: Any, cursor: str | None) -> None:
    """Reconnect the inbox's socket as if the page had seen only up to event ``cursor``;
    return once the server's replay has come."""
    wrapper = 'htmx.find("#inbox")["htmx-internal-data"].webSocket'
    page.evaluate(f"() => {wrapper}.socket.close(4000)")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "retry")
    mark = page.locator("#inbox [data-event-id]")
    mark.evaluate("(el, at) => el.setAttribute('data-event-id', at)", cursor)
    page.evaluate(f"() => {wrapper}.init()")
    expect(mark).not_to_have_attribute("data-event-id", cursor or "")


def test_a_new_interrupt_arrives_live_and_leaves_the_other_inbox_when_answered(
        forge: LiveServer, login: Login) -> None:
    mine, theirs = login("reviewer"), login("supervisor")
    counted = int(theirs.locator("#pending-count").inner_text())
    [pending] = forge.start("transfer", {"amount": 42})
    for page in (mine, theirs):
        expect(row(page, pending["id"])).to_be_visible(timeout=ARRIVAL_MS)
    expect(theirs.locator("#pending-count")).to_have_text(str(counted + 1))
    expect(row(mine, pending["id"])).to_contain_text("Approve this transfer?")
    expect(row(mine, pending["id"])).to_contain_text("transfer")
    row(mine, pending["id"]).get_by_role("button", name="Approve").click()
    expect(row(mine, pending["id"])).to_have_count(0, timeout=3000)
    expect(row(theirs, pending["id"])).to_have_count(0, timeout=3000)  # no reload
    expect(theirs.locator("#pending-count")).to_have_text(str(counted))
    assert forge.pending(pending["root_thread_id"]) == []


def test_two_browsers_answer_one_interrupt_and_the_second_is_told_who_won(
        forge: LiveServer, login: Login) -> None:
    [pending] = forge.start("transfer")
    detail = f"/interrupts/{pending['id']}/"
    first, second = login("reviewer", detail, live=False), login("supervisor", detail)
    first.get_by_role("button", name="Approve").click()
    # The page moves on to the next item (or the inbox) and says the answer was recorded.
    expect(first.locator("#notices")).to_contain_text("was recorded", timeout=5000)
    assert pending["id"] not in first.url
    # The second page is live: it is told who won before it sends anything.
    stale = second.locator(".answer-panel .stale")
    expect(stale).to_contain_text("Already answered by reviewer at", timeout=8000)
    expect(stale).to_contain_text("Latest checkpoint")
    expect(second.locator(".answer-panel form")).to_have_count(0)  # the latest state instead


def test_a_supervisor_resumes_one_sub_agent_and_its_sibling_stays_pending(
        forge: LiveServer, login: Login) -> None:
    pending = forge.start("supervisor", {"topic": "e2e"})
    pending = forge.pending(pending[0]["root_thread_id"], at_least=2)
    research = next(i for i in pending if i["sub_agent_id"] == "research_agent")
    writer = next(i for i in pending if i["sub_agent_id"] == "writer_agent")
    page = login("supervisor", f"/runs/{research['run_id']}/")
    node = page.locator(f"#run-{research['run_id']}")
    expect(node).to_contain_text("interrupted")
    node.get_by_role("button", name="Accept").click()
    # The tree reloads itself when the run moves on (websocket "tree changed").
    expect(page.locator(f"#run-{research['run_id']} .status").first).to_have_text(
        "completed", timeout=5000)
    sibling = page.locator(f"#run-{writer['run_id']}")
    expect(sibling.locator(".status").first).to_have_text("interrupted")
    expect(sibling.locator(".pending-interrupt")).to_have_count(1)
    still = forge.pending(writer["root_thread_id"])
    assert [i["id"] for i in still] == [writer["id"]]


def test_an_auditor_cannot_answer(forge: LiveServer, login: Login) -> None:
    page = login("auditor")
    [pending] = forge.start("transfer")
    line = row(page, pending["id"])
    expect(line).to_be_visible()
    expect(line.get_by_role("button")).to_have_count(0)
    expect(line.get_by_role("link", name="View")).to_be_visible()
    line.locator(".row-link").focus()
    page.keyboard.press("a")  # says why nothing happened, in the row and aloud
    expect(line.locator(".key-note")).to_contain_text("this row is read-only for you")
    expect(page.locator("#announce")).to_contain_text("read-only for you")
    page.goto(f"{forge.url}/interrupts/{pending['id']}/")
    expect(page.locator(".answer-panel")).to_contain_text("Read-only")
    expect(page.locator(".answer-panel form")).to_have_count(0)
    # Forging the request the form would send: refused, and nothing is answered.
    status = page.evaluate("""async (url) => {
        const token = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
        const response = await fetch(url, {method: "POST", headers: {"X-CSRFToken": token,
            "Content-Type": "application/x-www-form-urlencoded"}, body: "action=approve"});
        return response.status;
    }""", f"/interrupts/{pending['id']}/answer/")
    assert status == 403
    assert [i["id"] for i in forge.pending(pending["root_thread_id"])] == [pending["id"]]


OPEN_SOCKET = """(url) => new Promise((resolve) => {
    const socket = new WebSocket(url);
    socket.onopen = () => { socket.close(); resolve("open"); };
    socket.onclose = (event) => resolve("refused " + event.code);
    document.addEventListener("securitypolicyviolation",
                              (event) => resolve("csp " + event.effectiveDirective));
    setTimeout(() => resolve("timeout"), 5000);
})"""


def test_an_anonymous_websocket_is_refused(forge: LiveServer, browser: Any) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{forge.url}/accounts/login/")
        ws_url = forge.url.replace("http://", "ws://") + "/ws/inbox/"
        assert page.evaluate(OPEN_SOCKET, ws_url).startswith("refused")
    finally:
        context.close()


def test_a_socket_opened_from_another_origin_is_refused(forge: LiveServer,
                                                        login: Login) -> None:
    page = login("reviewer")
    ws_url = forge.url.replace("http://", "ws://") + "/ws/inbox/"
    assert page.evaluate(OPEN_SOCKET, ws_url) == "open"  # the site itself, logged in
    # Same machine, another origin (localhost is in ALLOWED_HOSTS, but not this site).
    other = forge.url.replace("127.0.0.1", "localhost")
    page.goto(f"{other}/accounts/login/")
    # The Content-Security-Policy (connect-src 'self') stops the browser first...
    assert page.evaluate(OPEN_SOCKET, ws_url) == "csp connect-src"
    # ...and the server refuses it too, seen from a page of that origin without a CSP
    # (static files skip the middleware).
    page.goto(f"{other}/static/forgeui/forge.css")
    assert page.evaluate(OPEN_SOCKET, ws_url).startswith("refused")


def test_logging_out_in_one_tab_closes_the_inbox_socket_of_another(
        forge: LiveServer, login: Login) -> None:
    inbox = login("reviewer")
    other_tab = inbox.context.new_page()
    other_tab.goto(f"{forge.url}/runs/")
    other_tab.get_by_role("button", name="Log out").click()
    expect(other_tab).to_have_url(re.compile(r"/accounts/login/"))
    expect(inbox.locator("#live-status")).to_have_attribute("data-state", "off", timeout=2000)
    expect(inbox.locator("#live-status")).to_contain_text("signed out")


def test_a_dropped_socket_catches_up_on_reconnect(forge: LiveServer,
                                                  login: Login) -> None:
    page = login("reviewer")
    wrapper = 'htmx.find("#inbox")["htmx-internal-data"].webSocket'
    page.evaluate(f"() => {wrapper}.socket.close(4000)")  # a code the extension won't retry
    expect(page.locator("#live-status")).to_have_attribute("data-state", "retry")
    [missed] = forge.start("transfer", {"amount": 1})  # happens while disconnected
    page.wait_for_timeout(300)
    expect(row(page, missed["id"])).to_have_count(0)
    page.evaluate(f"() => {wrapper}.init()")  # what the extension does after a 1006
    # Replayed from the Event table after the cursor the page sent on reconnecting.
    expect(row(page, missed["id"])).to_be_visible(timeout=3000)
    expect(page.locator("#live-status")).to_have_attribute("data-state", "on")


def test_rows_replayed_on_reconnect_keep_the_readers_place(forge: LiveServer,
                                                            login: Login) -> None:
    token = uuid.uuid4().hex[:10]
    page = login("reviewer", f"/?q={token}")
    before = page.locator("#inbox [data-event-id]").get_attribute("data-event-id")
    first = forge.start("transfer", {"ref": token, "amount": 1})[0]
    second = forge.start("transfer", {"ref": token, "amount": 2})[0]
    expect(row(page, second["id"])).to_be_visible()
    page.keyboard.press("j")  # oldest first
    expect(row(page, first["id"])).to_have_class(CURRENT)
    replay_after(page, before)  # from before both rows: the server sends them again
    expect(row(page, first["id"])).to_have_class(CURRENT)
    expect(row(page, first["id"]).locator(".row-link")).to_be_focused()
    expect(page.locator("#inbox-rows tr.row[id]")).to_have_count(2)  # no row twice
    page.keyboard.press("j")
    expect(row(page, second["id"])).to_have_class(CURRENT)


def test_a_row_changed_live_stays_where_it_stands(forge: LiveServer, login: Login) -> None:
    """Someone claims the first row: it is sent again, live, and is redrawn where it
    stands, not moved to the end, so j and k go on through the list as it was."""
    token = uuid.uuid4().hex[:10]
    first, second = (forge.start("transfer", {"ref": token, "amount": n})[0] for n in (1, 2))
    page = login("reviewer", f"/?q={token}")
    rows = page.locator("#inbox-rows tr.row[id]")
    expect(rows).to_have_count(2)
    order = [f"int-{first['id']}", f"int-{second['id']}"]
    assert [rows.nth(n).get_attribute("id") for n in (0, 1)] == order
    page.keyboard.press("j")
    expect(row(page, first["id"])).to_have_class(CURRENT)
    forge.api("POST", f"/api/interrupts/{first['id']}/claim", who="supervisor")
    expect(row(page, first["id"])).to_contain_text("supervisor")  # redrawn, live
    assert [rows.nth(n).get_attribute("id") for n in (0, 1)] == order
    expect(row(page, first["id"])).to_have_class(CURRENT)
    page.keyboard.press("j")
    expect(row(page, second["id"])).to_have_class(CURRENT)
    page.keyboard.press("k")
    expect(row(page, first["id"])).to_have_class(CURRENT)


def test_a_row_redrawn_in_place_keeps_the_readers_place(forge: LiveServer,
                                                        login: Login) -> None:
    """Someone else answers one sign-off of a run: the run moves to a new checkpoint and
    its other pending row is redrawn where it stands, live. The reviewer on that row
    stays on it, focused, and the keys go on from there."""
    token = uuid.uuid4().hex[:10]
    started = forge.start("parallel_approvals", {"item": token, "amount": 40})
    asks = {i["node"]: i for i in forge.pending(started[0]["root_thread_id"], at_least=2)}
    page = login("reviewer", f"/?q={token}")
    finance, legal = row(page, asks["finance"]["id"]), row(page, asks["legal"]["id"])
    expect(page.locator("#inbox-rows tr.row[id]")).to_have_count(2)
    page.keyboard.press("j")
    expect(page.locator("#inbox-rows tr.row.current")).to_have_count(1)
    if "current" not in (finance.get_attribute("class") or ""):
        page.keyboard.press("j")
    expect(finance).to_have_class(CURRENT)
    checkpoint = finance.locator("code.id").last  # its title: the row's checkpoint id
    before = checkpoint.get_attribute("title")
    forge.api("POST", f"/api/interrupts/{asks['legal']['id']}/resume",
              {"value": {"type": "accept", "args": None}}, who="supervisor")
    expect(legal).to_have_count(0)
    expect(checkpoint).not_to_have_attribute("title", before)  # redrawn, live
    expect(finance).to_have_class(CURRENT)
    expect(finance.locator(".row-link")).to_be_focused()
    page.keyboard.press("k")  # the only row: the place stays where it is
    expect(finance).to_have_class(CURRENT)


def test_the_readers_place_passes_on_when_their_row_is_answered_elsewhere(
        forge: LiveServer, login: Login) -> None:
    """Someone else answers the row the reviewer is on: it leaves live, and the place and
    the focus pass to the next row, so the keys go on (not from the top, nor from <body>)."""
    token = uuid.uuid4().hex[:10]
    first, second, third = (forge.start("transfer", {"ref": token, "amount": n})[0]
                            for n in (1, 2, 3))
    page = login("reviewer", f"/?q={token}")
    expect(page.locator("#inbox-rows tr.row[id]")).to_have_count(3)
    page.keyboard.press("j")
    page.keyboard.press("j")  # oldest first: the second run's row
    expect(row(page, second["id"])).to_have_class(CURRENT)
    forge.api("POST", f"/api/interrupts/{second['id']}/resume", {"value": True})
    expect(row(page, second["id"])).to_have_count(0)
    expect(row(page, third["id"])).to_have_class(CURRENT)
    expect(row(page, third["id"]).locator(".row-link")).to_be_focused()
    forge.api("POST", f"/api/interrupts/{third['id']}/resume", {"value": True})
    expect(row(page, first["id"])).to_have_class(CURRENT)  # the last row: back one
    expect(row(page, first["id"]).locator(".row-link")).to_be_focused()
    page.keyboard.press("j")  # the only row left: the place stays
    expect(row(page, first["id"])).to_have_class(CURRENT)


def test_a_reject_counting_down_survives_a_replay_of_its_row(forge: LiveServer,
                                                              login: Login) -> None:
    """The reviewer rejects and the Undo bar counts down; the socket reconnects and the
    server sends the row again: the bar, its focus and the chance to undo stay."""
    token = uuid.uuid4().hex[:10]
    page = login("reviewer", f"/?q={token}")
    before = page.locator("#inbox [data-event-id]").get_attribute("data-event-id")
    [asked] = forge.start("transfer", {"ref": token, "amount": 3})
    expect(row(page, asked["id"])).to_be_visible()
    page.clock.install()  # the countdown waits for the test's clock
    page.keyboard.press("j")
    page.keyboard.press("r")
    undo = page.get_by_role("button", name="Undo")
    expect(undo).to_be_focused()
    replay_after(page, before)  # the row is sent again
    expect(undo).to_be_focused()
    expect(row(page, asked["id"])).to_have_class(CURRENT)
    undo.press("Enter")
    expect(page.locator(".undo-bar")).to_have_count(0)
    page.clock.run_for(6000)  # past the countdown: nothing is sent
    assert [i["id"] for i in forge.pending(asked["root_thread_id"])] == [asked["id"]]


def test_a_live_row_lines_up_with_the_header_on_a_laptop(forge: LiveServer,
                                                         login: Login) -> None:
    page = login("reviewer")  # 1440x900
    [pending] = forge.start("transfer", {"amount": 43})
    expect(row(page, pending["id"])).to_be_visible(timeout=5000)
    assert page.locator("table.inbox tbody tbody").count() == 0
    assert page.locator("#inbox-rows > tr#int-" + pending["id"]).count() == 1
    heads = page.locator("table.inbox thead th")
    cells = row(page, pending["id"]).locator(":scope > td")
    assert cells.count() == heads.count()
    for at in range(4):  # the columns a laptop shows first: select, question, age, answer
        head, cell = heads.nth(at).bounding_box(), cells.nth(at).bounding_box()
        assert abs(head["x"] - cell["x"]) < 1 and abs(head["width"] - cell["width"]) < 1
    approve = row(page, pending["id"]).get_by_role("button", name="Approve").bounding_box()
    assert approve["x"] >= 0 and approve["x"] + approve["width"] <= 1440
