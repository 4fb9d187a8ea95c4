"""Breakpoints in the browser, at desktop and phone sizes: Continue runs the guarded
node; Cancel, with a reason, stops the run before it (its side effect never happens) and
shows in the decisions list; no Reject anywhere a reject would not stop the node; bulk
answers offer only the rows they settle and report them by title, in words."""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from .conftest import PASSWORDS, LiveServer, Login
from .test_accessibility import check

LIVE_MS = 5000


def paused(forge: LiveServer, ledger: Path, version: str) -> dict[str, Any]:
    """A ``guarded`` run paused before ``ship``, whose side effect goes to ``ledger``."""
    [interrupt] = forge.start("guarded", {"version": version, "ledger": str(ledger)})
    return interrupt


def run_status(forge: LiveServer, run_id: str, until: str, timeout_s: float = 10) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        run = forge.api("GET", f"/api/runs/{run_id}")
        if run["status"] == until or time.monotonic() > deadline:
            return run
        time.sleep(0.1)


def shipped(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


def test_cancel_with_a_reason_stops_the_guarded_node(forge: LiveServer, login: Login,
                                                     tmp_path: Path,
                                                     size: dict[str, int]) -> None:
    ledger = tmp_path / "ledger.txt"
    version = f"2.4.{size['width']}"
    interrupt = paused(forge, ledger, version)
    page = login("reviewer", f"/interrupts/{interrupt['id']}/", live=False)
    page.set_viewport_size(size)
    expect(page.locator("h1")).to_have_text("Paused before ship")
    panel = page.locator(".answer-panel")
    expect(panel.get_by_role("button", name="Continue")).to_be_visible()
    expect(panel.get_by_role("button", name="Reject")).to_have_count(0)
    expect(panel.get_by_role("button", name="Approve")).to_have_count(0)
    expect(panel.locator("[title='Answers false'], [data-key=r]")).to_have_count(0)

    # No reason: refused beside the field, nothing recorded, the note typed beside it kept.
    note = panel.get_by_label("Note to this run", exact=False)
    note.fill("QA signs off on Monday")
    reason = panel.get_by_label("Reason")
    reason.fill("   ")
    panel.get_by_role("button", name="Cancel the run").click()
    error = page.locator(".cancel-run .error")
    expect(error).to_have_text("Say why the run is cancelled: a reason is required")
    expect(page.get_by_label("Reason")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Note to this run", exact=False)).to_have_value(
        "QA signs off on Monday")
    assert run_status(forge, interrupt["run_id"], "interrupted")["status"] == "interrupted"

    page.get_by_label("Reason").fill(f"{version} has not passed QA yet")
    page.get_by_role("button", name="Cancel the run").click()
    expect(page.locator("#notices")).to_contain_text("You cancelled the run at")
    run = run_status(forge, interrupt["run_id"], "cancelled")
    assert run["status"] == "cancelled" and run["output"] is None
    assert shipped(ledger) == []  # ship never ran

    page.goto(f"{forge.url}/audit/decisions/?q={version}")
    row = page.locator(f"tr.decision[data-interrupt='{interrupt['id']}']")
    expect(row).to_contain_text(f"Cancelled at breakpoint: {version} has not passed QA yet")
    expect(row).to_contain_text("reviewer")
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    page.goto(f"{forge.url}/audit/?action=breakpoint.cancel")
    expect(page.locator("tr.audit-breakpointcancel").first).to_be_visible()


def test_continue_runs_the_guarded_node(forge: LiveServer, login: Login, tmp_path: Path,
                                        size: dict[str, int]) -> None:
    ledger = tmp_path / "ledger.txt"
    version = f"5.0.{size['width']}"
    interrupt = paused(forge, ledger, version)
    page = login("reviewer", f"/interrupts/{interrupt['id']}/", live=False)
    page.set_viewport_size(size)
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#notices")).to_contain_text("was recorded")
    run = run_status(forge, interrupt["run_id"], "completed")
    assert run["status"] == "completed" and run["output"]["shipped"] is True
    assert shipped(ledger) == [f"shipped app-{version}.tar.gz"]


def test_a_breakpoint_row_has_no_reject_and_r_does_nothing(
        forge: LiveServer, login: Login, tmp_path: Path, size: dict[str, int]) -> None:
    ledger = tmp_path / "ledger.txt"
    version = f"6.0.{size['width']}-{uuid.uuid4().hex[:6]}"
    interrupt = paused(forge, ledger, version)
    page = login("reviewer", f"/?q={version}")
    page.set_viewport_size(size)
    row = page.locator(f"#int-{interrupt['id']}")
    expect(row.get_by_role("button", name="Continue")).to_be_visible()
    expect(row.get_by_role("button", name="Reject")).to_have_count(0)
    expect(row.get_by_role("link", name="Cancel run…")).to_be_visible()
    page.keyboard.press("j")
    expect(row).to_have_class("row current")
    page.keyboard.press("r")
    expect(page.locator(".undo-bar")).to_have_count(0)
    said = "A breakpoint has no reject"
    expect(row.locator(".key-note")).to_contain_text(said)  # where the reader looks
    expect(page.locator("#announce")).to_contain_text(said)  # and read out
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_contain_text("a breakpoint has no reject")
    page.keyboard.press("Escape")
    row.get_by_role("link", name="Cancel run…").click()
    expect(page.get_by_label("Reason")).to_be_visible()
    assert page.url.endswith(f"/interrupts/{interrupt['id']}/#cancel-{interrupt['id']}")
    assert forge.api("GET", f"/api/interrupts/{interrupt['id']}")["status"] == "pending"
    assert shipped(ledger) == []


def test_bulk_offers_only_settleable_rows_and_names_them(
        forge: LiveServer, login: Login, tmp_path: Path, size: dict[str, int]) -> None:
    token = uuid.uuid4().hex[:8]
    ledger = tmp_path / "ledger.txt"
    stop = paused(forge, ledger, f"7.0.{token}")
    asks = [forge.start("custom", {"question": f"Refund order {n}?", "ref": token})[0]
            for n in (1, 2)]
    page = login("supervisor", f"/?q={token}")
    page.set_viewport_size(size)
    tick = {i["id"]: page.locator(f"#int-{i['id']} input[name=ids]") for i in [stop, *asks]}
    expect(page.locator(f"#int-{stop['id']}")).to_be_visible()

    # Approve (the default) settles the yes/no questions, never the breakpoint.
    expect(tick[stop["id"]]).to_be_hidden()
    expect(tick[asks[0]["id"]]).to_be_visible()
    page.get_by_label("Reject", exact=True).check()
    expect(tick[stop["id"]]).to_be_hidden()
    expect(page.get_by_role("button", name="Reject selected")).to_be_visible()
    expect(page.get_by_role("button", name="Approve selected")).to_be_hidden()

    page.get_by_label("Continue breakpoints").check()
    expect(tick[stop["id"]]).to_be_visible()
    expect(tick[asks[0]["id"]]).to_be_hidden()
    tick[stop["id"]].check()
    page.get_by_role("button", name="Continue selected").click()
    report = page.locator("#bulk-results .bulk-report")
    expect(report).to_contain_text("1 of 1 answered.")
    expect(report).to_contain_text(f"Paused before ship · version 7.0.{token}")
    expect(report).to_contain_text("→ Continued")
    assert run_status(forge, stop["run_id"], "completed")["status"] == "completed"
    assert shipped(ledger) == [f"shipped app-7.0.{token}.tar.gz"]

    # Ticked, then answered elsewhere while the bulk answer is on its way: the report
    # says by whom, in words.
    page.get_by_label("Approve", exact=True).check()
    for ask in asks:
        tick[ask["id"]].check()

    def answered_meanwhile(route: Any) -> None:
        forge.api("POST", f"/api/interrupts/{asks[1]['id']}/resume", {"value": True},
                  who="reviewer")
        route.continue_()

    page.route("**/interrupts/bulk/", answered_meanwhile)
    page.get_by_role("button", name="Approve selected").click()
    expect(report).to_contain_text("1 of 2 answered.")
    expect(report.locator("li.bulk-ok")).to_contain_text("Refund order 1?")
    expect(report.locator("li.bulk-ok")).to_contain_text("→ Approved")
    expect(report.locator("li.bulk-not")).to_contain_text("Refund order 2?")
    expect(report.locator("li.bulk-not")).to_contain_text(
        "→ Not answered: already answered by reviewer")
    text = report.inner_text()
    assert asks[1]["id"] not in text and asks[1]["id"][:8] not in text
    assert "stale" not in text and "schema" not in text.lower()


def test_the_new_states_pass_axe(forge: LiveServer, browser: Any, size: dict[str, int]) -> None:
    """A refused cancel, the bulk form on Continue, and a bulk report: nothing serious."""
    with tempfile.TemporaryDirectory(prefix="bp-") as folder:  # a path short enough to wrap
        interrupt = paused(forge, Path(folder) / "l.txt", f"8.0.{size['width']}")
        problems = axe_findings(forge, browser, size, interrupt)
        assert run_status(forge, interrupt["run_id"], "completed")["status"] == "completed"
    assert problems == []


def axe_findings(forge: LiveServer, browser: Any, size: dict[str, int],
                 interrupt: dict[str, Any]) -> list[str]:
    # The page's CSP forbids inline scripts, axe's tag included: this test bypasses it.
    context = browser.new_context(viewport=size, bypass_csp=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto(f"{forge.url}/accounts/login/?next=/interrupts/{interrupt['id']}/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", PASSWORDS["reviewer"])
    page.click("button[type=submit]")
    page.get_by_role("button", name="Cancel the run").click()
    page.locator(".cancel-run .error").wait_for()
    problems = check(page, "refused cancel")
    page.goto(f"{forge.url}/?q=8.0.{size['width']}")
    page.get_by_label("Continue breakpoints").check()
    problems += check(page, "bulk on continue")
    page.locator(f"#int-{interrupt['id']} input[name=ids]").check()
    page.get_by_role("button", name="Continue selected").click()
    page.locator(".bulk-report").wait_for()
    problems += check(page, "bulk report")
    context.close()
    return problems
