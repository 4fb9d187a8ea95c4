"""Decisions read in words in the browser: the inbox row and the decisions list say what
was asked and what was decided, with the exact JSON one keypress away."""

from __future__ import annotations

import os
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import LiveServer, Login

SIZES = [{"width": 1440, "height": 900}, {"width": 390, "height": 844}]
SHOTS = os.environ.get("FORGE_SHOTS", "")  # a folder for screenshots to look at, if set


def transfer(payee: str) -> dict[str, Any]:
    """A transfer whose graph marks amount and payee for its summary."""
    return {"question": "Approve this transfer?",
            "payload": {"amount": "500 EUR", "payee": payee, "iban": "DE89370400440532013000"},
            "options": {"summary": ["amount", "payee"]}}


def shot(page: Any, name: str) -> None:
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


@pytest.mark.parametrize("size", SIZES, ids=["1440x900", "390x844"])
def test_inbox_and_decisions_say_what_was_asked_and_decided(
        forge: LiveServer, login: Login, size: dict[str, int]) -> None:
    payee = f"ACME-{size['width']}"
    asked = f"Approve this transfer? · amount 500 EUR · payee {payee}"
    [paused] = forge.start("custom", transfer(payee))
    reviewer = login("reviewer", "/")
    reviewer.set_viewport_size(size)
    row = reviewer.locator(f"#int-{paused['id']}")
    expect(row.locator("td.summary")).to_contain_text(asked)
    shot(reviewer, f"inbox-{size['width']}")
    with reviewer.expect_response(f"**/interrupts/{paused['id']}/answer/") as sent:
        row.get_by_role("button", name="Approve", exact=True).click()
    assert sent.value.status == 200

    reviewer.goto(f"{forge.url}/?tab=done")
    done = reviewer.locator(f"#int-{paused['id']}")
    expect(done).to_contain_text(asked)
    expect(done.locator(".decision")).to_contain_text("→ Approved")
    expect(done).not_to_contain_text("true")

    auditor = login("auditor", "/audit/decisions/", live=False)
    auditor.set_viewport_size(size)
    auditor.goto(f"{forge.url}/audit/decisions/?q={payee}")
    decision = auditor.locator(f"tr.decision[data-interrupt='{paused['id']}']")
    expect(decision).to_contain_text(f"{asked} → Approved")
    toggle = decision.locator("details.json-toggle")
    expect(toggle.locator("pre")).not_to_be_visible()
    # Keyboard only: from the export link, Tab reaches the row's JSON toggle; Enter opens it.
    auditor.locator("#decisions .count a", has_text="JSON").focus()
    auditor.keyboard.press("Tab")
    expect(toggle.locator("summary")).to_be_focused()
    auditor.keyboard.press("Enter")
    expect(toggle.locator("pre")).to_be_visible()
    expect(toggle.locator("pre")).to_have_text("true")
    shot(auditor, f"decisions-{size['width']}")
