"""``ForgeSaver`` against LangGraph's own checkpointer conformance suite, on both databases.

The suite calls only the async methods and counts a capability a saver does not override as
passed without running it, so each capability is checked to be detected and to have run
tests, every one of them passing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from forgeui.langgraph import ForgeSaver

CAPABILITIES = ("put", "put_writes", "get_tuple", "list", "delete_thread",
                "delete_for_runs", "copy_thread", "prune")


async def conforms(alias: str) -> None:
    @checkpointer_test(name=f"ForgeSaver({alias})")
    async def saver() -> AsyncIterator[ForgeSaver]:
        yield ForgeSaver(alias)

    ran: list[tuple[str, str, bool]] = []
    progress = ProgressCallbacks(
        on_test_result=lambda cap, name, ok, _tb: ran.append((cap, name, ok)))
    report = await validate(saver, progress=progress)
    failures = {cap: r.failures for cap, r in report.results.items() if r.failures}
    assert not failures, failures
    assert report.passed_all_base()
    assert report.passed_all()
    for cap in CAPABILITIES:
        result = report.results[cap]
        assert result.detected, cap
        assert result.tests_passed > 0 and result.tests_failed == 0, (cap, result)
    prune_tests = {name for cap, name, ok in ran if cap == "prune" and ok}
    assert {"test_prune_keep_latest_single_thread", "test_prune_delete_all"} <= prune_tests
    assert report.conformance_level() == "FULL"


@pytest.mark.django_db(transaction=True, databases=["sqlite"])
async def test_conformance_on_sqlite(close_worker_connections: None) -> None:
    await conforms("sqlite")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
async def test_conformance_on_postgres(close_worker_connections: None) -> None:
    await conforms("postgres")
