"""An agent's approval request in the browser: one decision per call, diffs, field errors.

At desktop and phone sizes, by keyboard where a person would, with axe finding nothing
serious or critical on the page as first shown and as given back with errors.
"""

from __future__ import annotations

import time
from typing import Any

from .conftest import LiveServer
from .test_accessibility import check
from .test_layout import SCROLLS

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


def test_the_page_shows_each_call_with_its_diff_and_the_agent(
        forge: LiveServer, sized_reviewer: Any, size: dict[str, int]) -> None:
    made = ask(forge)
    sized_reviewer.goto(f"{forge.url}/interrupts/{made['interrupt_id']}/")
    assert sized_reviewer.locator(".asker").inner_text().startswith("Asked by tidy-bot")
    assert sized_reviewer.locator(".call").count() == 3
    first = sized_reviewer.locator("#call-0 .diff-lines")
    assert first.locator("del").inner_text() == "-hello"
    assert first.locator("ins").inner_text() == "+hello world"
    assert sized_reviewer.locator("#call-2 .diff-lines ins").inner_text() == "+x = 2"
    assert sized_reviewer.locator(".md strong").first.inner_text() == "the tidy-up agent"
    assert sized_reviewer.locator("script:has-text('alert(1)')").count() == 0
    # apply_patch offers no edit: no Edit choice, and no args box for it.
    assert sized_reviewer.locator("input[name=decision-2][value=edit]").count() == 0
    sized_reviewer.screenshot(path=f"/tmp/requests-page-{size['width']}.png", full_page=True)
    assert check(sized_reviewer, "request page") == []
    inbox = sized_reviewer.goto(f"{forge.url}/")
    assert inbox is not None
    row = sized_reviewer.locator(f"#int-{made['interrupt_id']}")
    assert "tidy-bot · sess-7" in row.inner_text()


def test_one_submission_decides_every_call_and_bad_edits_keep_what_was_typed(
        forge: LiveServer, sized_reviewer: Any, size: dict[str, int]) -> None:
    made = ask(forge)
    sized_reviewer.goto(f"{forge.url}/interrupts/{made['interrupt_id']}/")
    # send_email's args_schema is simple: its args are fields, prefilled, not JSON.
    assert sized_reviewer.locator("textarea[name=args-1]").count() == 0
    to = sized_reviewer.locator("[name=args-1-to]")
    assert to.input_value() == "team@example.com"
    assert sized_reviewer.locator("[name=args-1-subject]").input_value() == "notes"
    assert not sized_reviewer.evaluate(SCROLLS), "the form makes the page scroll sideways"
    # By keyboard: focus the first call's choices and pick Approve.
    sized_reviewer.locator("input[name=decision-0][value=approve]").focus()
    sized_reviewer.keyboard.press("Space")
    sized_reviewer.check("input[name=decision-1][value=edit]")
    to.fill("x")
    sized_reviewer.fill("[name=args-1-subject]", "notes, tidied")
    sized_reviewer.check("input[name=decision-2][value=reject]")
    sized_reviewer.fill("textarea[name=message-2]", "not this patch")
    sized_reviewer.click("button:has-text('Send decisions')")
    errors = sized_reviewer.locator(".call-decision.has-error .error")
    errors.first.wait_for()
    assert "at least 3 characters" in " ".join(errors.all_inner_texts())
    assert sized_reviewer.locator("[name=args-1-to]").input_value() == "x"
    assert sized_reviewer.locator("[name=args-1-subject]").input_value() == "notes, tidied"
    assert sized_reviewer.locator("textarea[name=message-2]").input_value() == "not this patch"
    assert sized_reviewer.locator("input[name=decision-2][value=reject]").is_checked()
    assert not sized_reviewer.evaluate(SCROLLS)
    sized_reviewer.screenshot(path=f"/tmp/requests-errors-{size['width']}.png", full_page=True)
    assert check(sized_reviewer, "request page with errors") == []
    sized_reviewer.locator("[name=args-1-to]").fill("dana@example.com")
    sized_reviewer.click("button:has-text('Send decisions')")
    sized_reviewer.wait_for_url(lambda url: made["interrupt_id"] not in url)
    found = forge.api("GET", f"/api/requests/{made['id']}", who="supervisor")
    assert found["status"] == "decided"
    assert found["decisions"] == [
        {"type": "approve", "args": None, "message": None},
        {"type": "edit", "args": {"to": "dana@example.com", "subject": "notes, tidied"},
         "message": None},
        {"type": "reject", "args": None, "message": "not this patch"}]
    assert found["responder"]["username"] == "reviewer"
    # The request's run resumed with the edit: it ends holding the edited args.
    run = finished(forge, made["id"])
    assert run["output"]["decisions"][1]["args"] == {"to": "dana@example.com",
                                                     "subject": "notes, tidied"}


def finished(forge: LiveServer, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        run: dict[str, Any] = forge.api("GET", f"/api/runs/{run_id}", who="supervisor")
        if run["status"] == "completed" or time.monotonic() > deadline:
            assert run["status"] == "completed", run
            return run
        time.sleep(0.2)
