"""Walks over the audit chain: the tip of the last walk that passed anchors the next one by
its hash, the periodic walk goes on from that tip (reading only what came after), and a
full walk from the first entry still runs now and then."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from forgeui.models import AuditEntry, ChainCheck, chain_check_every, verify_chain, verify_when_due
from forgeui.models.audit_chain import entry_hash
from tests.forgeui.models.test_audit_chain import ALIASES, BOTH, tamper, verify, write_chain

pytestmark = pytest.mark.django_db


def rewrite_and_rehash(alias: str, seq: int, action: str) -> None:
    """Change entry ``seq`` and re-hash it and every later entry, as someone able to write
    the whole table would: the chain holds together again, only its hashes differ."""
    records = list(AuditEntry.objects.using(alias).chain_records())
    prev = records[seq - 2]["hash"] if seq > 1 else records[0]["prev_hash"]
    statements: list[tuple[str, list[Any]]] = []
    for record in records[seq - 1:]:
        if record["seq"] == seq:
            record["action"] = action
        record["prev_hash"], record["hash"] = prev, entry_hash(prev, record)
        prev = record["hash"]
        statements.append(("UPDATE forgeui_auditentry SET action = %s, prev_hash = %s, "
                           "entry_hash = %s WHERE seq = %s",
                           [record["action"], record["prev_hash"], record["hash"],
                            record["seq"]]))
    tamper(alias, *statements)


@BOTH
@pytest.mark.parametrize("alias", ALIASES)
def test_a_chain_rewritten_and_rehashed_up_to_the_verified_tip_fails(alias: str) -> None:
    write_chain(alias)
    assert verify(alias) == "verified 6 entries\n"
    rewrite_and_rehash(alias, 3, "answer.approved")
    # Every link holds again: only the tip's hash, as verified, tells.
    assert verify(alias).startswith("exit 1: INVALID: changed at entry 6: entry 6 is not "
                                    "the entry verified earlier")
    assert not verify_chain(alias, full=False).ok


def test_a_walk_from_the_verified_tip_reads_only_what_came_after() -> None:
    write_chain("default", 6)
    verify_chain()
    for n in range(3):
        AuditEntry.objects.create(action=f"later.{n}")
    with CaptureQueriesContext(connection) as queries:
        verdict = verify_chain(full=False)
    assert (verdict.ok, verdict.entries, verdict.last_seq) == (True, 9, 9)
    check = ChainCheck.objects.newest()
    assert check is not None and (check.full, check.entries, check.last_seq) == (False, 9, 9)
    walked = [q["sql"] for q in queries.captured_queries if "entry_hash" in q["sql"]
              and "ORDER BY" in q["sql"]]
    # From the tip on (entry 6, whose hash must not have changed), not from entry 1.
    assert len(walked) == 1 and '"seq" > 5' in walked[0]


def test_a_walk_from_the_tip_checks_the_tip_and_a_full_walk_what_lies_before() -> None:
    write_chain("default", 6)
    verify_chain()
    tamper("default", ("UPDATE forgeui_auditentry SET action = 'forged' WHERE seq = 2", []))
    assert verify_chain(full=False).ok  # entry 2 lies before the tip: not read
    assert verify_chain().broken is not None
    tamper("default", ("UPDATE forgeui_auditentry SET action = 'forged' WHERE seq = 6", []))
    broken = verify_chain(full=False).broken
    assert broken is not None and (broken.kind, broken.seq) == ("changed", 6)


def test_the_sweep_goes_on_from_the_tip_often_and_walks_everything_daily() -> None:
    write_chain("default", 3)
    assert chain_check_every() <= timedelta(minutes=5)  # far more often than hourly
    first = verify_when_due()
    assert first is not None and ChainCheck.objects.get().full
    assert verify_when_due() is None  # not due yet
    AuditEntry.objects.create(action="later")
    with override_settings(FORGE_AUDIT_VERIFY_SECONDS=0):
        assert verify_when_due() is not None
        assert not ChainCheck.objects.newest().full
        with override_settings(FORGE_AUDIT_FULL_VERIFY_SECONDS=0):
            assert verify_when_due() is not None
            assert ChainCheck.objects.newest().full
    assert list(ChainCheck.objects.order_by("id").values_list("last_seq", flat=True)) == [
        3, 4, 4]
