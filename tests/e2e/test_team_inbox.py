"""The team inbox in the browser: a claim and a bulk answer move rows between tabs, live.

Pages stay open on different tabs ("Queue", "Assigned to me", "Done by me") of different
users; every change arrives over the websocket, nothing is reloaded.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from .conftest import LiveServer, Login

LIVE_MS = 3000


def row(page: Any, interrupt_id: str) -> Any:
    return page.locator(f"#int-{interrupt_id}")


def test_claim_and_bulk_answer_update_the_tabs_live(forge: LiveServer, login: Login) -> None:
    queue = login("reviewer", "/?tab=queue")
    everything = login("supervisor")
    mine = login("supervisor", "/?tab=assigned")
    done = login("supervisor", "/?tab=done")
    ids = [forge.start("transfer", {"amount": n})[0]["id"] for n in (1, 2, 3)]
    for interrupt_id in ids:
        expect(row(queue, interrupt_id)).to_be_visible(timeout=LIVE_MS)
        expect(row(everything, interrupt_id)).to_be_visible(timeout=LIVE_MS)
    expect(queue.locator(".tabs .tab.current")).to_have_text("Queue")

    # The supervisor claims the first: it leaves the reviewer's queue, joins "Assigned to me".
    row(everything, ids[0]).get_by_role("button", name="Claim").click()
    expect(row(everything, ids[0])).to_contain_text("claimed by supervisor")
    expect(row(everything, ids[0]).get_by_role("button", name="Release")).to_be_visible()
    expect(row(queue, ids[0])).to_have_count(0, timeout=LIVE_MS)
    expect(row(mine, ids[0])).to_be_visible(timeout=LIVE_MS)

    # Bulk: tick two rows, one steering note, "Approve selected"; reported row by row.
    for interrupt_id in ids[:2]:
        row(everything, interrupt_id).locator("input[name=ids]").check()
    everything.locator(".bulk-steering").fill("approved in bulk")
    everything.get_by_role("button", name="Approve selected").click()
    report = everything.locator("#bulk-results .bulk-report")
    expect(report).to_contain_text("2 of 2 answered")
    for interrupt_id in ids[:2]:
        expect(row(everything, interrupt_id)).to_have_count(0, timeout=LIVE_MS)
        expect(row(done, interrupt_id)).to_be_visible(timeout=LIVE_MS)
    expect(row(queue, ids[1])).to_have_count(0, timeout=LIVE_MS)
    expect(row(mine, ids[0])).to_have_count(0, timeout=LIVE_MS)
    expect(row(queue, ids[2])).to_be_visible()
    assert [i["id"] for i in forge.pending(forge.api("GET", f"/api/interrupts/{ids[2]}")
                                           ["root_thread_id"])] == [ids[2]]
