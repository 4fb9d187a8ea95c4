"""The gate in front of an approval: nobody approves their own, however the run came to
be (a fork, a sub-agent), and the compare-and-sets that make one decision win.

Through the API (real tokens, the immediate task backend, the real executor and the ORM
store) where a person acts; where a race is the point, the service's own steps are
called in the order the race would interleave them.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings

from forgeui.models import Interrupt, Run
from tests.forgeui.apiclient import Api

pytestmark = pytest.mark.django_db(transaction=True)

ONE = {"payments": {"nodes": ["signoff/sign"], "approvals": 1, "groups": ["finance"]}}


@pytest.fixture
def team(users: dict[str, User]) -> dict[str, User]:
    """alice and bob: reviewers in finance; the supervisor, who starts runs, too (so only
    the no-self-approval rule stops them)."""
    finance = Group.objects.create(name="finance")
    reviewer = Group.objects.get(name="reviewer")
    made = dict(users)
    for name in ("alice", "bob"):
        made[name] = User.objects.create_user(name, password=name)
        made[name].groups.add(reviewer, finance)
    users["supervisor"].groups.add(finance)
    return made


@pytest.fixture
def api(team: dict[str, User]) -> Api:
    return Api(team)


def resume(api: Api, who: str, interrupt_id: str, value: Any = True) -> Any:
    return api.post(who, f"/api/interrupts/{interrupt_id}/resume", {"value": value})


def paused(api: Api, graph: str = "signoff", input: Any = None) -> dict[str, Any]:
    started = api.start(graph, {"payload": {}} if input is None else input)
    [pending] = api.pending_of(started)
    return pending


# -- a fork keeps its starter -------------------------------------------------------------


@override_settings(FORGE_POLICIES=ONE)
def test_the_starter_may_not_approve_a_fork_of_their_run(api: Api) -> None:
    original = paused(api)
    forked = api.post("bob", f"/api/threads/{original['root_thread_id']}/fork", {})
    assert forked.status_code == 201, forked.content
    [copy] = api.pending(root_thread_id=forked.json()["thread_id"])

    refused = resume(api, "supervisor", copy["id"])
    assert refused.status_code == 403, refused.content
    assert "you started this run" in refused.json()["detail"]
    assert resume(api, "bob", copy["id"]).status_code == 403  # nor the one who forked it
    assert Interrupt.objects.get(pk=copy["id"]).status == "pending"
    assert resume(api, "alice", copy["id"]).status_code == 202

    root = Run.objects.get(thread_id=forked.json()["thread_id"])
    assert root.started_by.get_username() == "supervisor"
    assert root.forked_by.get_username() == "bob"
    shown = api.get("auditor", f"/api/runs/{root.run_id}").json()
    assert shown["started_by"] == "supervisor" and shown["forked_by"] == "bob"
