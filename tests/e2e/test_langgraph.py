"""A LangGraph graph's interrupts in the browser: they arrive live in the inbox, and a
reviewer answers them there, a plain question and a HITL middleware review alike."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import expect

from .conftest import LiveServer, Login
from .test_accessibility import check

MAIL = {"to": "dana@example.com", "body": "the report", "outcome": ""}


def finished(forge: LiveServer, run_id: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run: dict[str, Any] = forge.api("GET", f"/api/runs/{run_id}", who="auditor")
        if run["status"] == "completed" or time.monotonic() > deadline:
            return run
        time.sleep(0.1)


def test_a_langgraph_interrupt_arrives_live_and_is_answered_in_the_browser(
        forge: LiveServer, login: Login) -> None:
    page = login("reviewer")
    started = forge.api("POST", "/api/runs", {"graph": "lg_two", "input": {"log": []}})
    [first] = forge.pending(started["thread_id"], at_least=1)
    row = page.locator(f"#int-{first['id']}")
    expect(row).to_be_visible(timeout=5000)  # pushed over the websocket, no reload
    expect(row).to_contain_text("amount?")
    page.goto(f"{forge.url}/interrupts/{first['id']}/")
    page.locator(".answer-panel").get_by_role("button", name="Approve").click()
    expect(page.locator("#notices")).to_contain_text("was recorded", timeout=10_000)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pending = forge.pending(started["thread_id"])
        if pending and pending[0]["id"] != first["id"]:
            break
        time.sleep(0.1)
    assert pending[0]["payload"] == {"question": "pay True?"}  # interrupt() returned True


def test_a_middleware_review_is_decided_call_by_call(
        forge: LiveServer, sized_reviewer: Any, size: dict[str, int]) -> None:
    started = forge.api("POST", "/api/runs", {"graph": "lg_middleware", "input": MAIL})
    [pending] = forge.pending(started["thread_id"], at_least=1)
    page = sized_reviewer
    page.goto(f"{forge.url}/interrupts/{pending['id']}/")
    expect(page.locator(".asker")).to_contain_text("Proposed by node tools")
    assert page.locator("input[name=decision-1][value=edit]").count() == 0
    page.screenshot(path=f"/tmp/langgraph-review-{size['width']}.png", full_page=True)
    assert check(page, "LangGraph review") == []
    page.locator("input[name=decision-0][value=approve]").focus()
    page.keyboard.press("Space")  # by keyboard, as a reviewer would
    page.check("input[name=decision-1][value=reject]")
    page.fill("textarea[name=message-1]", "keep it")
    page.click("button:has-text('Send decisions')")
    page.wait_for_url(lambda url: pending["id"] not in url)
    run = finished(forge, started["run_id"])
    assert run["output"]["outcome"] == "send_email; not delete_draft: keep it"
