"""Supervisors, reviewers and auditors on the run pages, in headless Chromium.

The server here registers one graph of the tests' own beside the examples
(``FORGE_EXAMPLES=1``): ``flaky`` fails while a file exists, so a failed run can be
recovered from the page.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.processes import wait_until

from .conftest import LiveServer, Login, Seed, serve

LIVE_MS = 5000


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[LiveServer]:
    graphs = json.dumps({"flaky": "tests.forgeui.graphs:flaky"})
    with serve(tmp_path_factory.mktemp("live"), seeded, FORGE_GRAPHS=graphs,
               FORGE_EXAMPLES="1") as server:
        yield server


def run_of(forge: LiveServer, thread_id: str) -> dict[str, Any] | None:
    runs = forge.api("GET", "/api/runs?limit=200")["items"]
    return next((r for r in runs if r["thread_id"] == thread_id), None)


def no_sideways_scroll(page: Any) -> bool:
    """The page's content fits the window (wide tables scroll inside their own box)."""
    return bool(page.evaluate(
        "document.querySelector('main').scrollWidth <= document.documentElement.clientWidth"))


def test_a_fork_from_a_mid_step_checkpoint_goes_on_and_is_marked_both_ways(
        forge: LiveServer, login: Login) -> None:
    started = forge.api("POST", "/api/runs", {"graph": "supervisor", "input": {"topic": "q3"}})
    forge.pending(started["thread_id"], at_least=2)
    history = forge.api("GET", f"/api/threads/{started['thread_id']}/checkpoints")["items"]
    mid_step = next(cp for cp in history if cp["status"] == "running")
    seq = history.index(mid_step) + 1
    page = login("reviewer", f"/threads/{started['thread_id']}/", live=False)
    page.locator(f"#cp-{mid_step['id']}").get_by_role("button", name="Fork from here").click()
    page.wait_for_url(re.compile(r"/threads/(?!" + started["thread_id"] + ")"))
    badge = page.locator(".page-head .tag-fork")
    expect(badge).to_contain_text(f"fork of {started['thread_id'][:8]}… at #{seq}")
    new_thread = page.url.rstrip("/").rsplit("/", 1)[1]
    assert len(forge.pending(new_thread, at_least=2)) == 2  # it went on by itself
    fork = run_of(forge, new_thread)
    assert fork is not None and fork["status"] == "interrupted"
    badge.get_by_role("link").click()  # back to the original, at that checkpoint
    page.wait_for_url(re.compile(f"/threads/{started['thread_id']}/#cp-{mid_step['id']}"))
    expect(page.locator(".forks a.tag-fork")).to_contain_text(new_thread[:8])
    inbox = login("reviewer", "/?graph=supervisor")
    fork_rows = inbox.locator("tr.row", has=inbox.locator(".tag-fork"))
    expect(fork_rows).to_have_count(2)
    expect(fork_rows.first).to_contain_text(f"at #{seq}")


def test_fork_with_an_edited_input_reaches_the_node_with_it(
        forge: LiveServer, login: Login) -> None:
    (asked,) = forge.start("transfer", {"amount": 5})
    page = login("supervisor", f"/runs/{asked['run_id']}/")  # an edited input is a start
    page.get_by_text("Fork with changes…").click()
    editor = page.locator(f"#fork-value-{asked['id']}")
    expect(editor).to_have_value(re.compile(r'"amount": 5'))
    editor.fill('{"amount": 900')
    page.get_by_role("button", name="Fork with this change").click()
    expect(page.locator(f"#fork-error-{asked['id']}")).to_contain_text("not valid JSON")
    expect(page.locator(f"#fork-value-{asked['id']}")).to_have_value('{"amount": 900')
    page.locator(f"#fork-value-{asked['id']}").fill('{"amount": 900}')
    page.get_by_role("button", name="Fork with this change").click()
    page.wait_for_url(re.compile(r"/runs/(?!" + asked["run_id"] + ")"))
    expect(page.locator(".tree-node .tag-fork")).to_contain_text("edited")
    new_root = page.locator(".tree-node").first.get_attribute("data-run")
    (copy,) = wait_until(lambda: [i for i in forge.api(
        "GET", "/api/interrupts?status=pending&limit=200")["items"]
        if i["run_id"] == new_root], 10, "the fork to pause")
    panel = page.locator(f"#panel-{copy['id']}")
    panel.get_by_role("button", name="Approve").click()
    done = wait_until(lambda: (forge.api("GET", f"/api/runs/{new_root}")["status"]
                               == "completed") and forge.api("GET", f"/api/runs/{new_root}"),
                      10, "the fork to complete")
    assert done["output"]["input"] == {"amount": 900} and done["output"]["approved"] is True


def test_a_supervisor_starts_a_run_from_the_runs_page_and_it_opens_live(
        forge: LiveServer, login: Login) -> None:
    page = login("supervisor", "/runs/", live=False)
    expect(page.locator("#id_input-version")).to_be_visible()  # deploy comes first
    # The picker's form is swapped in by htmx: a choice made before the new part has
    # settled (and been given its listeners) is one no person could make that fast.
    page.evaluate("() => { window.settled = 0; document.body.addEventListener("
                  "'htmx:afterSettle', () => { window.settled += 1; }); }")
    page.locator("#start-graph").focus()
    page.keyboard.press("End")  # keyboard only: the picker, then the fields
    expect(page.locator("#start-graph")).to_have_value("transfer")
    expect(page.locator("#id_input-version")).to_have_count(0)  # no schema: JSON only
    page.wait_for_function("() => window.settled >= 1")
    page.locator("#start-graph").select_option("deploy")
    expect(page.locator("#id_input-version")).to_be_visible()
    page.locator("#id_input-version").focus()
    page.keyboard.type("7.1.0")
    page.locator("#id_input-canary").select_option("true")
    page.get_by_role("button", name="Start run").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/runs/[0-9a-f]+/$"))
    expect(page.locator(".pending-interrupt")).to_contain_text("deploy", timeout=LIVE_MS)
    expect(page.locator('.graph-node.is-paused[data-node="deploy"]')).to_have_count(1)
    run_id = page.url.rstrip("/").rsplit("/", 1)[1]
    assert forge.api("GET", f"/api/runs/{run_id}")["input"] == {"version": "7.1.0",
                                                                "canary": True}
    page.goto(f"{forge.url}/runs/")
    page.locator("#start-graph").select_option("transfer")
    expect(page.locator("#id_input-version")).to_have_count(0)  # the transfer form is in
    page.locator("#start-json").fill("{oops")
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#start-run .error")).to_contain_text("not valid JSON")
    expect(page.locator("#start-json")).to_have_value("{oops")


def test_a_failed_run_shows_its_error_and_a_supervisor_recovers_it(
        forge: LiveServer, login: Login, tmp_path: Path) -> None:
    outage = tmp_path / "outage"
    outage.touch()
    started = forge.api("POST", "/api/runs", {"graph": "flaky",
                                              "input": {"fail_while": str(outage)}})
    wait_until(lambda: (run_of(forge, started["thread_id"]) or {}).get("status") == "failed",
               10, "the run to fail")
    reviewer = login("reviewer", f"/runs/{started['run_id']}/")
    expect(reviewer.locator(".run-error")).to_contain_text("upstream unavailable")
    expect(reviewer.get_by_role("button", name="Recover")).to_have_count(0)
    page = login("supervisor", f"/runs/{started['run_id']}/")
    expect(page.locator(".run-error")).to_contain_text("upstream unavailable")
    outage.unlink()
    page.get_by_role("button", name="Recover").click()
    expect(page.locator(".tree-node").first.locator(".status")).to_have_text(
        "completed", timeout=LIVE_MS)
    expect(page.locator(".run-error")).to_have_count(0)


def test_cancelling_a_child_says_what_the_parent_gets_and_redraws_at_once(
        forge: LiveServer, login: Login) -> None:
    asked = forge.start("supervisor", {"topic": "cancel me"})
    forge.pending(asked[0]["root_thread_id"], at_least=2)
    root_run = run_of(forge, asked[0]["root_thread_id"])
    assert root_run is not None
    page = login("supervisor", f"/runs/{root_run['run_id']}/")
    writer = page.locator('.tree-node[data-sub-agent="writer_agent"]')
    expect(writer.locator(".answer-panel")).to_have_count(1)
    said: list[str] = []
    page.once("dialog", lambda dialog: (said.append(dialog.message), dialog.accept()))
    writer.get_by_role("button", name="Cancel").click()
    expect(writer.locator(".answer-panel")).to_have_count(0, timeout=LIVE_MS)
    expect(writer.locator(".status")).to_have_text(re.compile("cancell"), timeout=LIVE_MS)
    assert '{"cancelled": true, "node": "writer_agent"}' in said[0]


def test_an_auditor_lists_decisions_searches_and_exports_csv(
        forge: LiveServer, login: Login) -> None:
    (asked,) = forge.start("transfer", {"amount": 77, "to": "Globex"})
    forge.api("POST", f"/api/interrupts/{asked['id']}/resume",
              {"value": True, "steering": "Globex is a known payee"}, who="reviewer")
    page = login("auditor", "/audit/decisions/", live=False)
    page.get_by_label("Search").fill("Globex")
    page.get_by_label("Search").press("Enter")
    # The filtered rows replace the section in place: until then a click may press on the
    # old link and release on its replacement, which is no click at all.
    csv_link = page.get_by_role("link", name="CSV")
    expect(csv_link).to_have_attribute("href", re.compile(r"[?&]q=Globex(&|$)"))
    rows = page.locator("tr.decision")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("reviewer")
    expect(rows.first).to_contain_text("Globex is a known payee")
    with page.expect_download() as download:
        csv_link.click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    (found,) = list(csv.DictReader(io.StringIO(text)))
    assert found["answered_by"] == "reviewer" and found["interrupt_id"] == asked["id"]
    rows.first.get_by_role("link", name="checkpoint").click()
    page.wait_for_url(re.compile(r"/threads/.+#cp-"))


def test_a_supervisor_assigns_from_the_picker_and_releases_a_claim(
        forge: LiveServer, login: Login) -> None:
    (asked,) = forge.start("transfer", {"amount": 3})
    forge.api("POST", f"/api/interrupts/{asked['id']}/claim", who="reviewer")
    page = login("supervisor", f"/interrupts/{asked['id']}/", live=False)
    page.get_by_role("button", name="Release reviewer's claim").click()
    expect(page.locator(".assignment")).to_contain_text("Not claimed")
    page.locator('.assign-form input[name="users"][value="reviewer"]').focus()
    page.keyboard.press("Space")
    page.get_by_role("button", name="Assign", exact=True).click()
    expect(page.locator(".assignment")).to_contain_text("assigned to reviewer")
    got = forge.api("GET", f"/api/interrupts/{asked['id']}")
    assert got["claimed_by"] is None


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_the_new_pages_fit_every_width(forge: LiveServer, browser: Any,
                                       size: tuple[int, int], tmp_path: Path) -> None:
    from .conftest import log_in

    asked = forge.start("supervisor", {"topic": "widths"})
    page = log_in(browser, forge, "supervisor", "/runs/", live=False)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    for path in ("/runs/", f"/runs/{asked[0]['run_id']}/", "/audit/decisions/",
                 f"/interrupts/{asked[0]['id']}/"):
        page.goto(forge.url + path)
        assert no_sideways_scroll(page), (path, size)
        name = f"{size[0]}-{path.strip('/').replace('/', '_')[:40]}.png"
        page.screenshot(path=str(tmp_path / name), full_page=True)
    page.context.close()


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)], ids=["1440x900", "390x844"])
def test_a_reviewers_fork_is_visible_where_people_decide_and_audit(
        forge: LiveServer, browser: Any, size: tuple[int, int]) -> None:
    """Fork a paused run from its first (mid-step) checkpoint as a reviewer, answer in the
    fork: its timeline says what happens next and never "failed", its interrupt page and
    the decisions list (and CSV) name the origin and the forker, the runs list keeps the
    original's starter and names the forker."""
    from .conftest import PASSWORDS
    from .test_accessibility import check

    (asked,) = forge.start("transfer", {"amount": size[0], "to": "Initech"})
    origin = asked["root_thread_id"]
    first = forge.api("GET", f"/api/threads/{origin}/checkpoints")["items"][0]
    assert first["status"] == "running"  # saved before the first node ran
    context = browser.new_context(viewport={"width": size[0], "height": size[1]},
                                  bypass_csp=True)  # axe's script tag, in tests only
    context.set_default_timeout(10_000)
    page = context.new_page()
    shots = Path("/tmp/forks-e2e")
    shots.mkdir(exist_ok=True)
    try:
        page.goto(f"{forge.url}/accounts/login/?next=/threads/{origin}/")
        page.fill("#id_username", "reviewer")
        page.fill("#id_password", PASSWORDS["reviewer"])
        page.click("button[type=submit]")
        page.locator(f"#cp-{first['id']}").get_by_role("button", name="Fork from here").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/threads/(?!" + origin + ")"))
        fork_thread = page.url.rstrip("/").rsplit("/", 1)[1]
        (copy,) = forge.pending(fork_thread, at_least=1)
        page.reload()  # as it stands once the fork has gone on
        expect(page.locator(".next-step")).to_have_text(
            "Forked before ask ran: resuming will run ask.")
        expect(page.locator(".entry").first.locator(".status")).to_have_text("forked")
        expect(page.locator(".status-failed")).to_have_count(0)
        expect(page.locator(".timeline")).not_to_contain_text("failed")
        page.screenshot(path=str(shots / f"timeline-{size[0]}.png"), full_page=True)
        problems = check(page, "fork timeline")

        page.goto(f"{forge.url}/interrupts/{copy['id']}/")
        marker = page.locator(".page-head .fork-marker")
        expect(marker).to_contain_text(f"Fork of {origin[:8]}… at checkpoint #1, by reviewer")
        expect(page.locator(".context")).to_contain_text("Initech")
        problems += check(page, "fork interrupt")
        page.get_by_role("button", name="Approve").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#notices")).to_contain_text("was recorded")
        wait_until(lambda: (run_of(forge, fork_thread) or {}).get("status") == "completed",
                   10, "the fork to complete")

        page.goto(f"{forge.url}/audit/decisions/")
        row = page.locator(f'tr.decision[data-interrupt="{copy["id"]}"]')
        expect(row.locator(".fork-marker")).to_contain_text(
            f"Fork of {origin[:8]}… at checkpoint #1, by reviewer")
        page.screenshot(path=str(shots / f"decisions-{size[0]}.png"), full_page=True)
        problems += check(page, "decisions")
        with page.expect_download() as download:
            page.get_by_role("link", name="CSV").click()
        text = Path(download.value.path()).read_text(encoding="utf-8")
        found = {r["interrupt_id"]: r for r in csv.DictReader(io.StringIO(text))}
        forked_from = json.loads(found[copy["id"]]["forked_from"])
        assert (forked_from["thread_id"], forked_from["checkpoint_id"]) == (origin, first["id"])
        assert found[copy["id"]]["forked_by"] == "reviewer"

        page.goto(f"{forge.url}/runs/?graph=transfer")
        fork_row = page.locator("tr", has=page.locator(f'a[href="/threads/{fork_thread}/"]'))
        expect(fork_row.locator(".started-by")).to_contain_text("supervisor")
        expect(fork_row.locator(".started-by")).to_contain_text("forked by reviewer")
        origin_row = page.locator("tr", has=page.locator(f'a[href="/threads/{origin}/"]'))
        expect(origin_row.locator(".started-by")).to_have_text("supervisor")
        assert no_sideways_scroll(page)
        page.screenshot(path=str(shots / f"runs-{size[0]}.png"), full_page=True)
        problems += check(page, "runs")
        assert problems == []
    finally:
        context.close()


def test_a_refused_fork_keeps_the_answer_typed_and_makes_no_run(
        forge: LiveServer, login: Login) -> None:
    """A reviewer types an answer into the fork form; meanwhile a supervisor assigns the
    interrupt to someone else. The fork is refused beside the form, keeping what was
    typed, and none is made. Reviewers are offered only the answer: an edited input is a
    start."""
    (asked,) = forge.start("transfer", {"amount": 5000, "to": "Initech"})
    before = forge.api("GET", "/api/runs?limit=200")["count"]
    page = login("reviewer", f"/runs/{asked['run_id']}/")
    fork = page.locator("details.fork-edit").first
    fork.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(fork.locator('input[name="change"][value="input"]')).to_have_count(0)
    fork.get_by_label("Answer (JSON)").focus()
    page.keyboard.type("false")
    forge.api("POST", f"/api/interrupts/{asked['id']}/assign", {"users": ["supervisor"]})
    expect(page.locator(".pending-interrupt")).to_contain_text("assigned to supervisor",
                                                               timeout=LIVE_MS * 4)
    fork.get_by_role("button", name="Fork with this change").focus()
    page.keyboard.press("Enter")
    refused = page.locator("details.fork-edit").first
    expect(refused.locator(".error")).to_contain_text(
        "You may not answer this interrupt: assigned to supervisor")
    expect(refused.locator("textarea")).to_have_value("false")
    # The tree changes again and the page refreshes live: the refusal stays in view.
    page.evaluate("() => { window.refreshes = 0; document.addEventListener("
                  "'forge:refreshed', () => { window.refreshes += 1; }); }")
    forge.api("POST", f"/api/interrupts/{asked['id']}/assign", {"users": ["supervisor", "admin"]})
    page.wait_for_function("() => window.refreshes > 0", timeout=LIVE_MS * 4)
    expect(refused.locator(".error")).to_contain_text(
        "You may not answer this interrupt: assigned to supervisor")
    expect(refused.locator("textarea")).to_have_value("false")
    assert page.url.endswith(f"/runs/{asked['run_id']}/")
    assert no_sideways_scroll(page)
    shots = Path("/tmp/forks-e2e")
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / "refused-fork.png"), full_page=True)
    assert forge.api("GET", "/api/runs?limit=200")["count"] == before
