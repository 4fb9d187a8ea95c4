"""Screenshots of the dashboard for the README: ``python -m tests.e2e.screenshots``.

Starts a fresh forge under daphne (as the browser tests do), starts the demo graphs
through the API, answers and steers a little so the pages have a story, and saves
``docs/inbox.png``, ``docs/inbox-phone.png``, ``docs/interrupt.png``, ``docs/run-tree.png``
and ``docs/timeline.png``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from .conftest import ROOT, LiveServer, launch, log_in, serve


def story(server: LiveServer) -> dict[str, Any]:
    """Runs to look at: a full inbox, a three-level tree, a finished timeline."""
    server.start("transfer", {"amount": 250, "currency": "EUR", "to": "ACME Ltd"})
    server.start("supervisor", {"topic": "quarterly report"})
    server.start("deploy", {"version": "2.4.0"})
    email = server.start("email", {"to": "dana@example.com",
                                   "topic": "the delayed shipment #8812"})
    nested = server.start("nested", {"case": "refund dispute #4411"})
    approvals = server.start("parallel_approvals", {"item": "conference travel", "amount": 1200})
    approvals = server.pending(approvals[0]["root_thread_id"], at_least=2)
    server.start("parallel_approvals", {"item": "team offsite", "amount": 5400})
    legal = next(i for i in approvals if i["node"] == "legal")
    finance = next(i for i in approvals if i["node"] == "finance")
    server.api("POST", f"/api/interrupts/{legal['id']}/resume",
               {"value": {"type": "accept", "args": None},
                "steering": "Travel policy 4.2 applies; economy class only."}, who="reviewer")
    server.pending(legal["root_thread_id"], at_least=1)
    server.api("POST", f"/api/interrupts/{finance['id']}/resume",
               {"value": {"approved": True, "limit": 1500}}, who="supervisor")
    server.api("POST", "/api/steering", {"run_id": nested[0]["run_id"],
                                         "text": "Check the customer's order history first."},
               who="supervisor")
    server.api("POST", "/api/steering", {"run_id": email[0]["run_id"],
                                         "text": "Keep it short and apologise once."},
               who="supervisor")
    return {"tree_run": nested[0]["run_id"], "timeline": legal["thread_id"],
            "interrupt": email[0]["id"]}


def shoot(server: LiveServer, browser: Any, out: Path) -> None:
    seen = story(server)
    page = log_in(browser, server, "supervisor")
    page.wait_for_selector("#inbox-rows tr")
    page.wait_for_timeout(500)
    page.screenshot(path=out / "inbox.png", full_page=True)
    page.goto(f"{server.url}/interrupts/{seen['interrupt']}/")
    page.locator("details.state summary").click()
    page.screenshot(path=out / "interrupt.png", full_page=True)
    page.goto(f"{server.url}/runs/{seen['tree_run']}/")
    page.wait_for_selector("#live-status[data-state=on]")
    page.screenshot(path=out / "run-tree.png", full_page=True)
    page.goto(f"{server.url}/threads/{seen['timeline']}/")
    page.wait_for_selector("#timeline")
    page.screenshot(path=out / "timeline.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{server.url}/")
    page.wait_for_selector("#inbox-rows tr")
    page.screenshot(path=out / "inbox-phone.png")  # the first screenful, as a phone shows it
    page.context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, serve(Path(folder)) as server, \
            sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            shoot(server, browser, args.out)
        finally:
            browser.close()
    print(f"saved inbox.png, inbox-phone.png, interrupt.png, run-tree.png and timeline.png "
          f"in {args.out}")


if __name__ == "__main__":
    main()
