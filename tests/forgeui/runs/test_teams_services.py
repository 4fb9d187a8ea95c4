"""The services with roles in two teams at once: a finance reviewer who audits support
reads both, answers and claims only in finance (403 in support, audited there), finds
only finance's rows in their queue, and a bulk answer reports support's as forbidden."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from forgeui.models import ApiToken, AuditEntry, Interrupt
from forgeui.runs import bulk, services
from forgeui.runs.exceptions import Forbidden, NotFound
from forgeui.team import assignment
from tests.forgeui.api.teams_site import Site, site_fixture  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def both(site: Site) -> User:
    """Reviewer in finance, auditor in support."""
    user = User.objects.create_user("both")
    for name in ("finance:reviewer", "support:auditor"):
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)  # roles are cached on the user object


def test_reading_in_one_team_is_not_acting_there(site: Site, both: User) -> None:
    ticket, payout = site.of("ticket"), site.of("payout")
    for act in (lambda: services.answer_interrupt(both, ticket, True),
                lambda: services.claim_interrupt(both, ticket),
                lambda: services.add_steering_note(both, site.of("ticket", "run_id"), "hm"),
                lambda: services.fork_thread(both, site.of("ticket", "thread_id"))):
        with pytest.raises(Forbidden, match="support"):
            act()
    denied = AuditEntry.objects.filter(action="answer.denied", object_id=ticket)
    assert list(denied.values_list("team", flat=True)) == ["support"] * 2  # answer, claim
    with pytest.raises(NotFound):
        services.answer_interrupt(both, site.of("deploy"), True)
    assert services.claim_interrupt(fresh(both), payout).claimed_by_id == both.pk
    decided = services.answer_interrupt(fresh(both), payout, True)
    assert decided.answer is not None and decided.answer.interrupt_id == payout


def test_the_assignment_rule_answers_only_in_the_viewers_teams(site: Site,
                                                                both: User) -> None:
    viewer = assignment.Viewer.of(both)
    rows = {i.run.graph: i for i in Interrupt.objects.select_related("run", "claimed_by")}
    assert assignment.may_answer(viewer, rows["payout"])
    assert not assignment.may_answer(viewer, rows["ticket"])
    assert "team support" in assignment.refusal(viewer, rows["ticket"])
    plain = assignment.Viewer.of(site.api.users["reviewer"])
    assert all(assignment.may_answer(plain, row) for row in rows.values())


def test_the_queue_holds_only_rows_the_caller_answers(site: Site, both: User) -> None:
    site.api.tokens["both"] = ApiToken.objects.issue(both, name="t")[1]
    queue = site.api.get("both", "/api/interrupts", tab="queue").json()
    assert [i["id"] for i in queue["items"]] == [site.of("payout")]
    readable = site.api.get("both", "/api/interrupts", status="pending").json()
    assert {i["id"] for i in readable["items"]} == {site.of("payout"), site.of("ticket")}
    everything = site.api.get("reviewer", "/api/interrupts", tab="queue").json()
    assert everything["count"] == 3


def test_a_bulk_answer_forbids_rows_read_but_not_answered(site: Site, both: User) -> None:
    ids: list[Any] = [site.of("payout"), site.of("ticket"), site.of("deploy")]
    outcomes = {o.interrupt_id: o.outcome for o in bulk.bulk_answer(both, ids, True)}
    assert outcomes == {ids[0]: "accepted", ids[1]: "forbidden", ids[2]: "not_found"}
    answerable = set(bulk.answerable(fresh(both)).pending().values_list("pk", flat=True))
    assert answerable == set()  # the one finance row is answered now
    plain = bulk.answerable(site.api.users["reviewer"]).pending()
    assert set(plain.values_list("pk", flat=True)) == {ids[1], ids[2]}
