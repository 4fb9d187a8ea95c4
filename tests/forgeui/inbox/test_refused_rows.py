"""An inbox row offers no answer its policy would refuse: not to the run's starter, not
to a reviewer outside the policy's groups; on the page and in rows pushed live."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, override_settings

from forgeui.inbox.audience import Audience
from forgeui.inbox.feed import catch_up, snapshot
from forgeui.inbox.rows import row_mode
from forgeui.models import Event, Interrupt
from forgeui.runs import services
from forgeui.team.assignment import Viewer

pytestmark = pytest.mark.django_db(transaction=True)
POLICY = {"payments": {"nodes": ["signoff/sign"], "approvals": 2, "groups": ["finance"]}}


@pytest.fixture
def paused(users: dict[str, User]) -> Interrupt:
    """supervisor (in finance) starts it; alice is in finance, dave reviews outside it."""
    finance, reviewer = Group.objects.create(name="finance"), Group.objects.get(name="reviewer")
    for name, groups in (("alice", (reviewer, finance)), ("dave", (reviewer,))):
        User.objects.create_user(name, password=name).groups.add(*groups)
    users["supervisor"].groups.add(finance)
    started = services.start_run(users["supervisor"], "signoff", {"payload": {}})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


def row_on_inbox(name: str, interrupt: Interrupt) -> str:
    client = Client()
    client.force_login(User.objects.get(username=name))
    page = re.sub(r"\s+", " ", client.get("/").content.decode())
    return page.split(f'id="int-{interrupt.pk}"', 1)[1].split("</tr>", 1)[0]


@override_settings(FORGE_POLICIES=POLICY)
def test_the_inbox_offers_approve_only_to_whom_the_policy_counts(paused: Interrupt) -> None:
    for name in ("supervisor", "dave"):
        row = row_on_inbox(name, paused)
        assert 'value="approve"' not in row and "btn-claim" not in row, name
        assert "Under policy payments your answer would not count" in row, name
    mine = row_on_inbox("alice", paused)
    assert 'value="approve"' in mine and "would not count" not in mine


@override_settings(FORGE_POLICIES=POLICY)
def test_a_pushed_row_is_the_refused_one_for_the_starter(paused: Interrupt) -> None:
    event = Event.objects.filter(interrupt_id=paused.pk).order_by("-id").first()
    assert event is not None
    shared = snapshot(event.pk)
    assert shared.interrupt is not None and shared.facts is not None
    starter, alice = (Viewer.of(User.objects.get(username=n)) for n in ("supervisor", "alice"))
    assert row_mode(starter, shared.interrupt, shared.facts) == "refused"
    assert row_mode(alice, shared.interrupt, shared.facts) == "answer"
    assert 'value="approve"' not in shared.rows["refused"]
    assert 'value="approve"' in shared.rows["answer"]
    everywhere = Audience.of(User.objects.get(username="supervisor"))
    caught = catch_up(event.pk - 1, starter, everywhere)
    assert caught is not None
    [mine] = [s for s in caught[0] if s.interrupt_id == paused.pk]
    assert list(mine.rows) == ["refused"]


def test_without_a_policy_no_row_is_refused(paused: Interrupt) -> None:
    shared = snapshot(Event.objects.filter(interrupt_id=paused.pk).latest("id").pk)
    assert shared.interrupt is not None and shared.facts is not None
    assert "refused" not in shared.rows
    starter = Viewer.of(User.objects.get(username="supervisor"))
    assert row_mode(starter, shared.interrupt, shared.facts) == "answer"
