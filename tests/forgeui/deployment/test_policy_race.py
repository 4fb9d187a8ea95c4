"""Approvals racing on PostgreSQL, one process each: two people's approvals both count,
one person's counts once, and the approval that meets the policy resumes the run once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from forgeui.models import Answer, Approval, Interrupt
from tests.forgeui.conftest import ROOT, database_url, django_env, lines

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["postgres"]),
]
POLICY = {"race": {"nodes": ["signoff/sign"], "approvals": 2}}


def worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.forgeui.approval_worker", *args],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_the_approval_that_meets_the_policy_resumes_exactly_once(
        ledger: Path, tmp_path: Path) -> None:
    approvers = ["alice", "alice", "alice", "bob", "bob", "carol"]
    env = {**django_env(database_url("postgres"), FORGE_POLICIES=json.dumps(POLICY)),
           "DJANGO_SETTINGS_MODULE": "tests.settings"}
    out, err = worker(env, "setup", str(ledger)).communicate(timeout=120)
    assert out.strip(), err
    interrupt_id = out.strip().splitlines()[-1]
    go = tmp_path / "go"
    contenders = [worker(env, "approve", who, interrupt_id, str(go)) for who in approvers]
    for proc in contenders:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    outcomes = []
    for proc in contenders:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes.append(json.loads(out.splitlines()[-1]))

    kinds = [o["outcome"] for o in outcomes]
    assert kinds.count("resumed") == 1, outcomes
    assert kinds.count("counted") == 1, outcomes
    counted = {o["user"] for o in outcomes if o["outcome"] in ("counted", "resumed")}
    assert len(counted) == 2, outcomes  # two people, whoever they were
    assert set(kinds) <= {"resumed", "counted", "counted already", "stale"}
    approvals = Approval.objects.using("postgres").filter(interrupt_id=interrupt_id)
    assert sorted(a.user.username for a in approvals) == sorted(counted)
    assert Answer.objects.using("postgres").filter(interrupt_id=interrupt_id).count() == 1
    assert Interrupt.objects.using("postgres").get(pk=interrupt_id).status == "answered"
    assert lines(ledger) == ["signed True"]
