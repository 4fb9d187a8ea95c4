"""Approval policies on the pages: the inbox row and the interrupt page say how far an
interrupt has come, a counted approval keeps it pending, and the starter is refused."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from forgeui.models import Approval, Interrupt
from forgeui.runs import services
from tests.forgeui.web.four_eyes import POLICY, as_user, text

pytestmark = pytest.mark.django_db(transaction=True)





@override_settings(FORGE_POLICIES=POLICY)
def test_the_page_counts_an_approval_and_shows_the_progress(paused: Interrupt) -> None:
    page = as_user("alice").post(f"/interrupts/{paused.pk}/answer/",
                                 {"action": "approve", "where": "page"}, follow=True)
    assert page.status_code == 200
    assert ("Your approval was counted: 1 of 2 approvals: alice; waiting for one more "
            "from finance") in text(page)
    assert Interrupt.objects.get(pk=paused.pk).status == "pending"
    inbox = text(as_user("bob").get("/"))
    assert "1 of 2 approvals: alice; waiting for one more from finance" in inbox
    detail = as_user("alice").get(f"/interrupts/{paused.pk}/")
    assert "You approved this" in text(detail) and 'name="action"' not in text(detail)
    done = as_user("bob").post(f"/interrupts/{paused.pk}/answer/",
                               {"action": "approve", "where": "page"}, follow=True)
    assert done.status_code == 200 and "Your answer to" in text(done)
    assert Interrupt.objects.get(pk=paused.pk).status == "answered"


@override_settings(FORGE_POLICIES=POLICY)
def test_the_starter_is_refused_on_the_page(paused: Interrupt) -> None:
    refused = as_user("supervisor").post(f"/interrupts/{paused.pk}/answer/",
                                         {"action": "approve", "where": "page"})
    assert refused.status_code == 403
    assert "you started this run" in text(refused)
    assert not Approval.objects.exists()


@override_settings(FORGE_POLICIES=POLICY)
def test_a_row_approval_stays_in_the_inbox_with_its_count(paused: Interrupt) -> None:
    row = as_user("alice").post(f"/interrupts/{paused.pk}/answer/",
                                {"action": "approve", "where": "row"}, HTTP_HX_REQUEST="true")
    assert row.status_code == 200
    assert "Your approval was counted: 1 of 2 approvals: alice" in text(row)


@override_settings(FORGE_POLICIES={**POLICY, "bots": {
    "agents": ["billing-bot"], "auto_approve": {"field": "amount", "lt": 100},
    "escalate_after_s": 3600, "escalate_to": "leads"}})
def test_the_admin_lists_the_policies_read_only(users: dict[str, User]) -> None:
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", password="root"))
    page = text(admin.get("/admin/policies/"))
    assert "payments" in page and "signoff/sign" in page and "groups finance" in page
    assert "billing-bot" in page and "after 3600 s to group leads" in page
    assert "<form" not in page.split('id="content"')[-1]  # nothing to change here
    assert as_user("reviewer").get("/admin/policies/").status_code == 302  # staff only


# -- what an answer comes back as, and the way it takes --------------------------------


@override_settings(FORGE_POLICIES=POLICY)
def test_an_answer_comes_back_as_a_frozen_decided_with_its_progress(
        paused: Interrupt) -> None:
    alice, bob = User.objects.get(username="alice"), User.objects.get(username="bob")
    counted = services.answer_interrupt(alice, paused.pk, True)
    assert isinstance(counted, services.Decided)
    assert counted.answer is None and isinstance(counted.approval, Approval)
    assert counted.progress.startswith("1 of 2 approvals: alice")
    assert not hasattr(counted.approval, "progress")  # nothing hung on the model
    with pytest.raises(dataclasses.FrozenInstanceError):
        counted.progress = "changed"  # type: ignore[misc]
    decided = services.answer_interrupt(bob, paused.pk, True)
    assert decided.approval is None and decided.answer is not None
    assert decided.progress.startswith("2 of 2 approvals") and decided.made == decided.answer


def forgeui_stack(frame: FrameType | None) -> list[str]:
    """The forgeui modules on the stack from the view down, innermost last, each run of
    frames in one module counted once."""
    names: list[str] = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("forgeui.") and (not names or names[-1] != module):
            names.append(module)
        if module.startswith("forgeui.web.views"):
            return names[::-1]
        frame = frame.f_back
    return []


@dataclasses.dataclass
class Paths:
    """The forgeui modules calls reached from a view, and the stacks that entered one
    module twice."""

    reached: set[str] = dataclasses.field(default_factory=set)
    reentries: set[tuple[str, ...]] = dataclasses.field(default_factory=set)


@pytest.fixture
def paths() -> Iterator[Paths]:
    found = Paths()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_globals.get("__name__", "").startswith("forgeui."):
            stack = forgeui_stack(frame)
            found.reached.update(stack)
            if len(set(stack)) < len(stack):
                found.reentries.add(tuple(stack))

    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)


@override_settings(FORGE_POLICIES=POLICY)
def test_the_answers_path_crosses_no_module_twice(paused: Interrupt, paths: Paths) -> None:
    """From the page to the resumed node, through the counted vote and the one that
    decides: no module is left for another and entered again."""
    for name in ("alice", "bob"):
        client = Client()
        client.force_login(User.objects.get(username=name))
        answered = client.post(f"/interrupts/{paused.pk}/answer/",
                               {"action": "approve", "where": "page"})
        assert answered.status_code == 302
    assert Interrupt.objects.get(pk=paused.pk).status == "answered"
    assert {"forgeui.runs.services.answering", "forgeui.runs.services.voting",
            "forgeui.runs.services._recording", "forgeui.runs.tasks"} <= paths.reached
    assert paths.reentries == set()
