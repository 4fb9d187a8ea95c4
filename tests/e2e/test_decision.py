"""Deciding in the browser, from the interrupt page and from the inbox.

Context beside the question, markdown that renders without running anything, Agent
Inbox's four responses reaching the node, fields that survive every refusal, the inbox
on a phone, keyboard-only answering, and a reject that can be undone.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from playwright.sync_api import expect

from .conftest import LiveServer, Login

PHONE = {"width": 390, "height": 844}
EXACT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")  # local zone: "UTC+01:00"
EXACT_UTC = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")


def output_of(forge: LiveServer, run_id: str, timeout_s: float = 10) -> Any:
    """The run's output once it has completed."""
    deadline = time.monotonic() + timeout_s
    while True:
        run = forge.api("GET", f"/api/runs/{run_id}")
        if run["status"] == "completed" or time.monotonic() > deadline:
            return run.get("output")
        time.sleep(0.1)


def test_the_context_panel_shows_input_and_state(forge: LiveServer, login: Login) -> None:
    [paused] = forge.start("deploy", {"version": "7.1.0", "channel": "beta"})
    page = login("reviewer", f"/interrupts/{paused['id']}/", live=False)
    expect(page.locator("h1")).to_have_text("Paused before deploy")
    context = page.get_by_label("Context for this decision")
    expect(context).to_contain_text("deploy")  # the graph
    expect(context.locator("dl.fields").first).to_contain_text("channel")  # the run's input
    expect(context).to_contain_text("app-7.1.0.tar.gz")  # the paused node's input
    state = context.locator("details.state")
    expect(state.locator("pre").first).not_to_be_visible()  # collapsed
    state.locator("summary").click()
    expect(state).to_contain_text("build")
    expect(state.locator("pre").first).to_contain_text("app-7.1.0.tar.gz")
    raw = page.locator("details.raw-json")
    expect(raw.locator("pre")).not_to_be_visible()
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_contain_text('"kind": "before"')


def test_markdown_renders_and_a_script_inside_it_does_not_run(
        forge: LiveServer, login: Login) -> None:
    description = ("**Check** the owner\n\n- owner\n- budget\n\n"
                   "<script>window.pwned = 1</script>\n\n"
                   '<img src="x" onerror="window.pwned = 2"> [link](javascript:window.pwned=3)')
    [paused] = forge.start("custom", {"payload": {"title": "Review the owner",
                                                  "description": description}})
    page = login("reviewer", f"/interrupts/{paused['id']}/", live=False)
    markdown = page.locator(".question .md")
    expect(markdown.locator("strong")).to_have_text("Check")
    expect(markdown.locator("li")).to_have_text(["owner", "budget"])
    expect(markdown).to_contain_text("<script>window.pwned = 1</script>")  # as text
    expect(markdown.locator("script, img")).to_have_count(0)
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.pwned") is None


def test_each_of_the_four_responses_reaches_the_node(forge: LiveServer, login: Login) -> None:
    runs = {kind: forge.start("email", {"to": f"{kind}@example.com"})[0]
            for kind in ("accept", "edit", "respond", "ignore")}
    page = login("reviewer", f"/interrupts/{runs['accept']['id']}/", live=False)

    def open_answer(kind: str) -> None:
        page.goto(f"{forge.url}/interrupts/{runs[kind]['id']}/")

    page.get_by_role("button", name="Accept").click()
    expect(page.locator("#notices")).to_contain_text("was recorded")
    open_answer("edit")
    expect(page.locator("#id_edit-to")).to_have_value("edit@example.com")  # from the args
    page.locator("#id_edit-subject").fill("Edited subject")
    page.get_by_role("button", name="Send edit").click()
    expect(page.locator("#notices")).to_contain_text("was recorded")
    open_answer("respond")
    page.get_by_label("Respond in words").fill("Mention the refund first.")
    page.get_by_role("button", name="Send response").click()
    expect(page.locator("#notices")).to_contain_text("was recorded")
    open_answer("ignore")
    page.clock.install()  # the countdown's timers run on the test's clock: it jumps past them
    page.get_by_role("button", name="Ignore").click()
    expect(page.locator(".undo-bar")).to_contain_text("Ignore in")
    expect(page.locator("#notices")).not_to_contain_text("was recorded")
    page.clock.run_for(5000)
    expect(page.locator("#notices")).to_contain_text("was recorded")

    accepted = output_of(forge, runs["accept"]["run_id"])
    assert accepted["response"] == "accept" and accepted["sent_to"] == "accept@example.com"
    edited = output_of(forge, runs["edit"]["run_id"])
    assert edited["response"] == "edit" and edited["send"]["subject"] == "Edited subject"
    responded = output_of(forge, runs["respond"]["run_id"])
    assert responded == {"send": None, "response": "respond",
                         "feedback": "Mention the refund first.", "sent": False}
    assert output_of(forge, runs["ignore"]["run_id"]) == {
        "send": None, "response": "ignore", "sent": False}


def test_fields_survive_every_error(forge: LiveServer, login: Login) -> None:
    [plain] = forge.start("transfer", {"amount": 3})
    page = login("reviewer", f"/interrupts/{plain['id']}/", live=False)
    note = page.get_by_label("Note to this run (transfer), kept apart from the answer")
    expect(note).to_have_attribute("maxlength", "4000")
    expect(page.locator(".answer-form")).to_contain_text("Up to 4000 characters")
    note.fill("keep this note")
    page.locator("summary", has_text="Answer with JSON").click()
    page.get_by_label("Any JSON value").fill("{not json")
    page.get_by_role("button", name="Send JSON answer").click()
    expect(page.locator(".answer-panel [role=alert]")).to_contain_text("not valid JSON")
    expect(page.get_by_label("Any JSON value")).to_have_value("{not json")
    expect(note).to_have_value("keep this note")

    approvals = forge.start("parallel_approvals", {"item": "desk", "amount": 80})
    approvals = forge.pending(approvals[0]["root_thread_id"], at_least=2)
    finance = next(i for i in approvals if i["node"] == "finance")
    legal = next(i for i in approvals if i["node"] == "legal")
    page.goto(f"{forge.url}/interrupts/{finance['id']}/")
    page.get_by_label("Note to this run (parallel_approvals)").fill("about the limit")
    page.get_by_label("limit").fill("-5")
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator(".answer-panel .field.has-error").first).to_be_visible()
    expect(page.get_by_label("limit")).to_have_value("-5")
    expect(page.get_by_label("Note to this run (parallel_approvals)")).to_have_value(
        "about the limit")

    # A lost race: the note is offered as a steering note on the (still live) run. The
    # live page keeps the form it was typed into, so the late answer is still sent.
    second = login("supervisor", f"/interrupts/{legal['id']}/")
    second.get_by_label("Note to this run (parallel_approvals)").fill("lost but kept")
    page.goto(f"{forge.url}/interrupts/{legal['id']}/")
    page.get_by_role("button", name="Accept").click()
    expect(page.locator("#notices")).to_contain_text("was recorded")
    expect(second.locator(".answer-panel .stale")).to_contain_text("Already answered by")
    second.get_by_role("button", name="Accept").click()
    stale = second.locator(".answer-panel .stale")
    expect(stale).to_contain_text("Already answered by reviewer")
    expect(stale.locator("textarea")).to_have_value("lost but kept")
    stale.get_by_role("button", name="Save as a steering note").click()
    expect(second.locator(".answer-panel")).to_contain_text("Saved as a steering note")
    page.goto(f"{forge.url}/interrupts/{finance['id']}/")
    expect(page.get_by_label("Context for this decision")).to_contain_text("lost but kept")


def test_on_a_phone_the_inbox_has_no_sideways_scroll(forge: LiveServer, login: Login) -> None:
    [paused] = forge.start("transfer", {"amount": 390, "currency": "EUR",
                                        "to": "A very long beneficiary name Ltd & Co KG"})
    page = login("reviewer")
    page.set_viewport_size(PHONE)
    line = page.locator(f"#int-{paused['id']}")
    expect(line).to_be_visible()
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    approve = line.get_by_role("button", name="Approve")
    approve.scroll_into_view_if_needed()
    box = approve.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    logout = page.get_by_role("button", name="Log out").bounding_box()
    assert logout is not None and logout["x"] + logout["width"] <= PHONE["width"]
    for path in ("/runs/", "/audit/", f"/interrupts/{paused['id']}/", f"/runs/{paused['run_id']}/"):
        page.goto(forge.url + path)
        assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth"), path


def test_keyboard_only_answering_with_undo(forge: LiveServer, login: Login) -> None:
    token = uuid.uuid4().hex[:10]
    first = forge.start("transfer", {"ref": token, "amount": 1})[0]
    second = forge.start("transfer", {"ref": token, "amount": 2})[0]
    page = login("reviewer", f"/?q={token}")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).not_to_be_visible()

    # The countdown's timers run on the test's clock from here: it jumps past them.
    page.clock.install()
    answers: list[str] = []
    page.on("request", lambda r: answers.append(r.url) if "/answer/" in r.url else None)
    page.keyboard.press("j")  # oldest first: the first run's row
    expect(page.locator(f"#int-{first['id']}")).to_have_class("row current")
    page.keyboard.press("r")  # reject waits, with the focus on Undo
    expect(page.get_by_role("button", name="Undo")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".undo-bar")).to_have_count(0)
    page.clock.run_for(6000)  # past the countdown: an undone reject is never sent
    assert answers == []
    assert [i["id"] for i in forge.pending(first["root_thread_id"])] == [first["id"]]

    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(page.locator(f"#int-{first['id']}")).to_have_class("row current")
    page.keyboard.press("a")  # approved; the next row becomes current
    expect(page.locator(f"#int-{second['id']} .row-link")).to_be_focused()
    page.keyboard.press("r")
    expect(page.locator(".undo-bar")).to_be_visible()
    page.clock.run_for(5000)  # the countdown ends: the reject is sent
    expect(page.locator(f"#int-{second['id']}")).to_have_count(0)
    run_first = output_of(forge, first["run_id"])
    run_second = output_of(forge, second["run_id"])
    assert run_first["approved"] is True and run_second["approved"] is False


def test_a_field_keeps_its_letters_from_the_shortcuts(forge: LiveServer, login: Login) -> None:
    token = uuid.uuid4().hex[:10]
    [paused] = forge.start("transfer", {"ref": token})
    page = login("reviewer", f"/?q={token}")
    note = page.locator(f"#int-{paused['id']} .row-note")
    note.click()
    page.keyboard.type("a rare note")
    expect(note).to_have_value("a rare note")
    page.wait_for_timeout(300)
    assert [i["id"] for i in forge.pending(paused["root_thread_id"])] == [paused["id"]]


def test_times_show_the_exact_moment_and_switch_to_utc(forge: LiveServer, login: Login) -> None:
    [paused] = forge.start("transfer")
    page = login("reviewer")
    moment = page.locator(f"#int-{paused['id']} time[data-relative]")
    expect(moment).to_have_text("just now")
    expect(moment).to_have_attribute("title", EXACT)
    page.locator("#tz-toggle").click()
    expect(page.locator("#tz-toggle")).to_have_text("Times: UTC")
    expect(moment).to_have_attribute("title", EXACT_UTC)
    page.reload()
    expect(page.locator("#tz-toggle")).to_have_text("Times: UTC")  # remembered
