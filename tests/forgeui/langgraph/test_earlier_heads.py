"""A LangGraph thread the bridge saved whole, before it counted ended interrupts in its
heads, goes on with the interrupts LangGraph gives one id numbered apart."""

from __future__ import annotations

import dataclasses

from forgeui.langgraph.mirror import ENDED
from forgeui.store import DjangoCheckpointStore
from tests.forgeui.apiclient import Api


def test_a_head_saved_whole_by_an_earlier_bridge_numbers_its_interrupts(
        more_graphs: Api) -> None:
    started = more_graphs.start("lg_thrice", {"log": []})
    [first] = more_graphs.pending_of(started)
    assert more_graphs.post("reviewer", f"/api/interrupts/{first['id']}/resume",
                            {"value": "a"}).status_code == 202
    [second] = more_graphs.pending_of(started)
    store = DjangoCheckpointStore()
    latest = store.load_sync(started["thread_id"])
    assert latest is not None
    earlier = {k: v for k, v in latest.metadata.items() if k != ENDED}
    store.save_sync(dataclasses.replace(latest, id=f"{latest.id}.whole", parent_id=latest.id,
                                        step=latest.step + 1, metadata=earlier))
    assert more_graphs.post("reviewer", f"/api/interrupts/{second['id']}/resume",
                            {"value": "b"}).status_code == 202
    [third] = more_graphs.pending_of(started)
    assert third["payload"] == {"question": "step 2?"} and third["order"] == 2
    assert third["id"] not in (first["id"], second["id"])
    assert more_graphs.post("reviewer", f"/api/interrupts/{third['id']}/resume",
                            {"value": "c"}).status_code == 202
    run = more_graphs.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "completed" and run["output"] == {"log": ["a", "b", "c"]}
