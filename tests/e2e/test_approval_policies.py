"""Two of three sign off in two browsers, live, the second reading the first one's note;
the run's starter is told on the page why they may not approve.

The e2e server's ``FORGE_POLICIES`` (``conftest.POLICIES``) asks two of reviewer,
supervisor and admin to approve every ``signoff`` run; the supervisor starts them.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from .conftest import LiveServer, Login

LIVE_MS = 5000


def row(page: Any, interrupt_id: str) -> Any:
    return page.locator(f"#int-{interrupt_id}")


def test_two_of_three_approve_in_two_browsers(forge: LiveServer, login: Login) -> None:
    reviewer, admin = login("reviewer"), login("admin")
    [paused] = forge.start("signoff", {"payload": {"amount": 1200}})
    interrupt_id = paused["id"]
    for page in (reviewer, admin):
        expect(row(page, interrupt_id)).to_contain_text("0 of 2 approvals", timeout=LIVE_MS)

    row(reviewer, interrupt_id).locator(".row-note").fill("check the IBAN first")
    row(reviewer, interrupt_id).get_by_role("button", name="Approve").click()
    # The row says so (then, live, is drawn again with the count: it is still pending).
    expect(row(reviewer, interrupt_id)).to_contain_text(
        "1 of 2 approvals: reviewer; waiting for one more from admin")
    # The other browser hears of it over the websocket, and the interrupt is still pending.
    expect(row(admin, interrupt_id)).to_contain_text(
        "1 of 2 approvals: reviewer; waiting for one more from admin", timeout=LIVE_MS)
    assert forge.api("GET", f"/api/interrupts/{interrupt_id}")["status"] == "pending"
    # The next approver reads the first one's note, as theirs, before deciding.
    admin.goto(f"{forge.url}/interrupts/{interrupt_id}/")
    expect(admin.locator(".votes .vote")).to_contain_text("reviewer approved")
    expect(admin.locator(".votes .vote")).to_contain_text("check the IBAN first")
    admin.goto(f"{forge.url}/")

    row(admin, interrupt_id).get_by_role("button", name="Approve").click()
    for page in (admin, reviewer):  # answered now: it leaves both inboxes
        expect(row(page, interrupt_id)).to_have_count(0, timeout=LIVE_MS)
    run = forge.api("GET", f"/api/runs/{paused['run_id']}")
    for _ in range(100):
        if run["status"] == "completed":
            break
        reviewer.wait_for_timeout(100)
        run = forge.api("GET", f"/api/runs/{paused['run_id']}")
    assert run["status"] == "completed"
    assert [a["user"] for a in run["output"]["meta"]["approvals"]] == ["reviewer", "admin"]


def test_the_starter_is_refused_on_the_interrupt_page(forge: LiveServer, login: Login) -> None:
    [paused] = forge.start("signoff", {"payload": {}})
    page = login("supervisor", f"/interrupts/{paused['id']}/")
    expect(page.locator(".approvals")).to_contain_text("0 of 2 approvals; waiting for two "
                                                      "from admin or reviewer")
    # Not offered a decision the policy would refuse: told why instead.
    expect(page.locator(".policy-refused")).to_contain_text("you started this run")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    assert forge.api("GET", f"/api/interrupts/{paused['id']}")["status"] == "pending"
