"""axe-core over every page, for every role, at desktop and phone sizes.

axe-core is vendored for the tests only (``vendor/``, MPL-2.0, from the npm registry) and
injected by Playwright; users are never served it. A page passes with no serious or
critical violation and no sideways scroll. The data holds runs and interrupts in every
state (running, failed, cancelled, forked, expired), each page seen by every role.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import manage

from .conftest import PASSWORDS, SIZES, LiveServer

AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
RUN_AXE = """async () => {
    const found = await axe.run(document, {resultTypes: ["violations"]});
    return found.violations.filter(v => ["serious", "critical"].includes(v.impact))
        .map(v => ({rule: v.id, impact: v.impact, help: v.help,
                    where: v.nodes.slice(0, 5).map(n => n.target.join(" "))}));
}"""


@pytest.fixture(scope="module")
def pages(forge: LiveServer, states: dict[str, str]) -> dict[str, str]:
    """One of every page, with runs in every state worth drawing."""
    transfer = forge.start("transfer", {"amount": 12, "currency": "EUR", "to": "ACME"})[0]
    email = forge.start("email", {"to": "dana@example.com"})[0]
    deploy = forge.start("deploy", {"version": "3.0.0"})[0]
    tree = forge.start("supervisor", {"topic": "axe"})[0]
    approvals = forge.start("parallel_approvals", {"item": "chairs", "amount": 90})
    approvals = forge.pending(approvals[0]["root_thread_id"], at_least=2)
    finance = next(i for i in approvals if i["node"] == "finance")
    answered = forge.start("transfer", {"amount": 1})[0]
    forge.api("POST", f"/api/interrupts/{answered['id']}/resume",
              {"value": True, "steering": "fine"}, who="reviewer")
    chat = forge.start("chat", {"messages": []})[0]
    for turn in range(12):  # a state too large to show whole on every entry
        forge.api("POST", f"/api/interrupts/{chat['id']}/resume",
                  {"value": f"message {turn} " + "lorem ipsum " * 35}, who="reviewer")
        chat = forge.pending(chat["root_thread_id"], at_least=1)[0]
    return {"inbox": "/", "interrupt": f"/interrupts/{transfer['id']}/",
            "actions": f"/interrupts/{email['id']}/",
            "schema": f"/interrupts/{finance['id']}/",
            "breakpoint": f"/interrupts/{deploy['id']}/",
            "answered": f"/interrupts/{answered['id']}/",
            "runs": "/runs/", "run tree": f"/runs/{tree['run_id']}/",
            "timeline": f"/threads/{answered['thread_id']}/", "audit": "/audit/",
            "long timeline": f"/threads/{chat['thread_id']}/?order=newest",
            "tree history": f"/threads/{tree['root_thread_id']}/tree/",
            "decisions": "/audit/decisions/", "graph": "/graphs/supervisor/", **states}


@pytest.fixture(scope="module")
def states(forge: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Runs and interrupts in every state: running, failed, cancelled, forked, expired.
    ``/runs/`` (in ``pages``) lists them all."""
    files = tmp_path_factory.mktemp("states")
    gate, outage = files / "gate", files / "down"
    outage.write_text("down")
    running = forge.api("POST", "/api/runs", {"graph": "blocking", "input": {
        "gate": str(gate), "entered": str(files / "entered"), "ledger": str(files / "ledger")}})
    failed = forge.api("POST", "/api/runs", {"graph": "flaky",
                                             "input": {"fail_while": str(outage)}})
    cancelled = forge.start("transfer", {"amount": 5, "to": "cancelled"})[0]
    forge.api("POST", f"/api/runs/{cancelled['run_id']}/cancel")
    tree = forge.start("supervisor", {"topic": "one agent cancelled"})
    tree = forge.pending(tree[0]["root_thread_id"], at_least=2)
    research = next(i for i in tree if i["sub_agent_id"] == "research_agent")
    forge.api("POST", f"/api/runs/{research['run_id']}/cancel")
    original = forge.start("transfer", {"amount": 9, "to": "forked"})[0]
    forked = forge.api("POST", f"/api/threads/{original['thread_id']}/fork", {})
    fork = forge.pending(forked["thread_id"], at_least=1)[0]
    overdue, defaulted = expired(forge)
    yield {"running run": f"/runs/{running['run_id']}/",
           "running timeline": f"/threads/{running['thread_id']}/",
           "failed run": f"/runs/{failed['run_id']}/",
           "failed timeline": f"/threads/{failed['thread_id']}/",
           "cancelled run": f"/runs/{cancelled['run_id']}/",
           "cancelled interrupt": f"/interrupts/{cancelled['id']}/",
           "cancelled timeline": f"/threads/{cancelled['thread_id']}/",
           "cancelled sub-agent": f"/runs/{research['run_id']}/",
           "forked run": f"/runs/{fork['run_id']}/",
           "forked interrupt": f"/interrupts/{fork['id']}/",
           "forked timeline": f"/threads/{fork['thread_id']}/",
           "overdue interrupt": f"/interrupts/{overdue['id']}/",
           "defaulted interrupt": f"/interrupts/{defaulted['id']}/"}
    gate.write_text("open")  # the running run may finish now


def expired(forge: LiveServer) -> tuple[dict[str, Any], dict[str, Any]]:
    """An interrupt past its deadline with no default (overdue), and one answered with
    its default by the deadline sweep."""
    overdue = forge.start("custom", {"question": "Overdue?", "options": {"deadline_s": 1}})[0]
    defaulted = forge.start("custom", {"question": "Defaulted?",
                                       "options": {"deadline_s": 1, "default": False}})[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        manage("expire_interrupts", env=forge.env)
        if forge.api("GET", f"/api/interrupts/{defaulted['id']}")["status"] == "answered":
            return overdue, defaulted
    raise AssertionError("the deadline sweep never answered the interrupt with its default")


def check(page: Any, where: str) -> list[str]:
    """axe's serious and critical findings on the page as it is now, and sideways scroll."""
    if not page.evaluate("() => 'axe' in window"):  # not there by the context's init script
        page.add_script_tag(path=str(AXE))
    problems = [f"{where}: {v['rule']} ({v['impact']}) {v['help']} at {v['where']}"
                for v in page.evaluate(RUN_AXE)]
    if not page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth"):
        problems.append(f"{where}: scrolls sideways")
    return problems


def check_every_size(page: Any, where: str) -> list[str]:
    """``check`` at each size every page must work at, the page resized in place (as a
    turned phone or a narrowed window is): the size it is at first, then the others."""
    problems = []
    for size in sorted(SIZES, key=lambda size: size != page.viewport_size):
        page.set_viewport_size(size)
        problems += check(page, f"{where} at {size['width']}x{size['height']}")
    return problems


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    # The page's CSP forbids inline scripts, axe's tag included: tests only bypass it.
    context = browser.new_context(viewport=SIZES[0], bypass_csp=True)
    context.set_default_timeout(10_000)
    # axe in every page as it loads: a tag added per page costs as much as axe's own run.
    context.add_init_script(path=str(AXE))
    yield context
    context.close()


@pytest.mark.parametrize("who", ["reviewer", "supervisor", "auditor"])
def test_every_page_has_no_serious_violation(forge: LiveServer, pages: dict[str, str],
                                             context: Any, who: str) -> None:
    page = context.new_page()
    page.goto(f"{forge.url}/accounts/login/")
    problems = check_every_size(page, "login")
    page.fill("#id_username", who)
    page.fill("#id_password", PASSWORDS[who])
    page.click("button[type=submit]")
    page.wait_for_url(f"{forge.url}/")
    for name, path in pages.items():
        page.goto(forge.url + path)
        page.wait_for_load_state("load")
        problems += check_every_size(page, name)
    page.goto(forge.url + "/")
    page.keyboard.press("?")  # the shortcut help, open
    problems += check_every_size(page, "keyboard help")
    assert problems == []


def test_error_states_have_no_serious_violation(forge: LiveServer, pages: dict[str, str],
                                                context: Any) -> None:
    page = context.new_page()
    page.goto(f"{forge.url}/accounts/login/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", "wrong")
    page.click("button[type=submit]")
    problems = check_every_size(page, "login refused")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", PASSWORDS["reviewer"])
    page.click("button[type=submit]")
    page.wait_for_url(f"{forge.url}/")
    page.goto(forge.url + pages["schema"])
    page.get_by_label("limit").fill("-1")
    page.get_by_role("button", name="Send answer").click()
    page.locator(".field.has-error").first.wait_for()
    problems += check_every_size(page, "schema error")
    page.goto(forge.url + pages["answered"])
    problems += check_every_size(page, "answered")
    page.goto(forge.url + "/links/not-a-link/")
    problems += check_every_size(page, "decision link not valid")
    page.goto(forge.url + someone_elses_link(forge, pages["interrupt"]))
    problems += check_every_size(page, "decision link for someone else")
    assert problems == []


def someone_elses_link(forge: LiveServer, interrupt_page: str) -> str:
    """The path of a decision link e-mailed to the supervisor."""
    interrupt_id = interrupt_page.strip("/").split("/")[-1]
    made = manage("shell", "-c", (
        "from django.contrib.auth.models import User; "
        "from forgeui.team import decision_links; "
        f"print(decision_links.url_for(User.objects.get(username='supervisor'), "
        f"{interrupt_id!r}))"), env=forge.env).stdout
    return "/links/" + made.strip().split("/links/")[1]
