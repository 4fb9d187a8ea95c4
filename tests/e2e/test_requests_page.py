"""An agent's approval request in the browser: one decision per call, diffs, field errors.

At desktop and phone sizes, by keyboard where a person would, with axe finding nothing
serious or critical on the page as first shown and as given back with errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import PASSWORDS, LiveServer
from .test_accessibility import SIZES, check

SCHEMA = {"type": "object", "properties": {"to": {"type": "string", "minLength": 3},
                                           "subject": {"type": "string"}},
          "required": ["to"], "additionalProperties": False}


def ask(forge: LiveServer) -> dict[str, Any]:
    body = {"title": "Tidy the notes and mail the team?",
            "description": "Two calls from **the tidy-up agent**. <script>alert(1)</script>",
            "agent": {"name": "tidy-bot", "session": "sess-7"},
            "actions": [
                {"name": "write_file", "description": "Fix the greeting",
                 "args": {"path": "notes.txt", "old": "hello\nbye\n", "new": "hello world\nbye\n"}},
                {"name": "send_email", "args": {"to": "team@example.com", "subject": "notes"},
                 "args_schema": SCHEMA},
                {"name": "apply_patch", "decisions": ["approve", "reject"],
                 "args": {"diff": "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"}}]}
    made: dict[str, Any] = forge.api("POST", "/api/requests", body, who="supervisor")
    return made


@pytest.fixture(params=SIZES, ids=["1440x900", "390x844"])
def size(request: pytest.FixtureRequest) -> dict[str, int]:
    return dict(request.param)


@pytest.fixture
def reviewer(browser: Any, forge: LiveServer, size: dict[str, int]) -> Iterator[Any]:
    # The page's CSP forbids inline scripts, axe's tag included: tests only bypass it.
    context = browser.new_context(viewport=size, bypass_csp=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto(f"{forge.url}/accounts/login/?next=/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", PASSWORDS["reviewer"])
    page.click("button[type=submit]")
    page.wait_for_url(f"{forge.url}/")
    yield page
    context.close()


def test_the_page_shows_each_call_with_its_diff_and_the_agent(
        forge: LiveServer, reviewer: Any, size: dict[str, int]) -> None:
    made = ask(forge)
    reviewer.goto(f"{forge.url}/interrupts/{made['interrupt_id']}/")
    assert reviewer.locator(".asker").inner_text().startswith("Asked by tidy-bot")
    assert reviewer.locator(".call").count() == 3
    first = reviewer.locator("#call-0 .diff-lines")
    assert first.locator("del").inner_text() == "-hello"
    assert first.locator("ins").inner_text() == "+hello world"
    assert reviewer.locator("#call-2 .diff-lines ins").inner_text() == "+x = 2"
    assert reviewer.locator(".md strong").first.inner_text() == "the tidy-up agent"
    assert reviewer.locator("script:has-text('alert(1)')").count() == 0
    # apply_patch offers no edit: no Edit choice, and no args box for it.
    assert reviewer.locator("input[name=decision-2][value=edit]").count() == 0
    reviewer.screenshot(path=f"/tmp/requests-page-{size['width']}.png", full_page=True)
    assert check(reviewer, "request page") == []
    inbox = reviewer.goto(f"{forge.url}/")
    assert inbox is not None
    row = reviewer.locator(f"#int-{made['interrupt_id']}")
    assert "tidy-bot · sess-7" in row.inner_text()


def test_one_submission_decides_every_call_and_bad_edits_keep_what_was_typed(
        forge: LiveServer, reviewer: Any, size: dict[str, int]) -> None:
    made = ask(forge)
    reviewer.goto(f"{forge.url}/interrupts/{made['interrupt_id']}/")
    # By keyboard: focus the first call's choices and pick Approve.
    reviewer.locator("input[name=decision-0][value=approve]").focus()
    reviewer.keyboard.press("Space")
    reviewer.check("input[name=decision-1][value=edit]")
    box = reviewer.locator("textarea[name=args-1]")
    box.fill('{"to": "x", "cc": "me"}')
    reviewer.check("input[name=decision-2][value=reject]")
    reviewer.fill("textarea[name=message-2]", "not this patch")
    reviewer.click("button:has-text('Send decisions')")
    errors = reviewer.locator(".call-decision.has-error .error")
    errors.first.wait_for()
    text = " ".join(errors.all_inner_texts())
    assert "too short" in text and "cc" in text
    assert reviewer.locator("textarea[name=args-1]").input_value() == '{"to": "x", "cc": "me"}'
    assert reviewer.locator("textarea[name=message-2]").input_value() == "not this patch"
    assert reviewer.locator("input[name=decision-2][value=reject]").is_checked()
    reviewer.screenshot(path=f"/tmp/requests-errors-{size['width']}.png", full_page=True)
    assert check(reviewer, "request page with errors") == []
    reviewer.locator("textarea[name=args-1]").fill('{"to": "dana@example.com"}')
    reviewer.click("button:has-text('Send decisions')")
    reviewer.wait_for_url(lambda url: made["interrupt_id"] not in url)
    found = forge.api("GET", f"/api/requests/{made['id']}", who="supervisor")
    assert found["status"] == "decided"
    assert found["decisions"] == [
        {"type": "approve", "args": None, "message": None},
        {"type": "edit", "args": {"to": "dana@example.com"}, "message": None},
        {"type": "reject", "args": None, "message": "not this patch"}]
    assert found["responder"]["username"] == "reviewer"
