"""Every form that changes something refuses a POST without its CSRF token: one test
per view, with the data that view would act on, so an ``@csrf_exempt`` anywhere shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import Answer, AuditEntry, Interrupt, Run, SteeringNote
from forgeui.runs import services

pytestmark = pytest.mark.django_db(transaction=True)

Form = Callable[[Interrupt], tuple[str, dict[str, Any]]]
FORMS: dict[str, Form] = {
    "answer": lambda i: (f"/interrupts/{i.pk}/answer/", {"action": "approve"}),
    "decide": lambda i: (f"/interrupts/{i.pk}/decide/", {"decision-0": "approve"}),
    "keep note": lambda i: (f"/interrupts/{i.pk}/note/", {"steering": "remember"}),
    "bulk": lambda i: ("/interrupts/bulk/", {"ids": [i.pk], "action": "approve"}),
    "claim": lambda i: (f"/interrupts/{i.pk}/claim/", {"op": "claim"}),
    "release": lambda i: (f"/interrupts/{i.pk}/claim/", {"op": "release"}),
    "assign": lambda i: (f"/interrupts/{i.pk}/assign/", {"users": "reviewer"}),
    "steer": lambda i: (f"/runs/{i.run_id}/steer/", {"text": "slow down"}),
    "cancel": lambda i: (f"/runs/{i.run_id}/cancel/", {}),
    "cancel at a breakpoint": lambda i: (f"/interrupts/{i.pk}/cancel/", {"reason": "no"}),
    "recover": lambda i: (f"/runs/{i.run_id}/recover/", {}),
    "fork": lambda i: (f"/threads/{i.root_thread_id}/fork/", {}),
    "fork with changes": lambda i: (f"/runs/{i.run_id}/fork/", {
        "interrupt_id": i.pk, "change": "answer", "value": "true"}),
    "start": lambda i: ("/runs/start/", {"graph": "transfer", "input": "{}"}),
    "logout": lambda i: ("/accounts/logout/", {}),
}


def state() -> tuple[int, ...]:
    return (Answer.objects.count(), SteeringNote.objects.count(), Run.objects.count(),
            AuditEntry.objects.count(),
            Interrupt.objects.filter(claimed_by__isnull=False).count(),
            Interrupt.objects.exclude(assignees="").count())


@pytest.mark.parametrize("name", FORMS)
def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(
        users: dict[str, User], name: str) -> None:
    started = services.start_run(users["supervisor"], "transfer", {"amount": 1})
    interrupt = Interrupt.objects.of_tree(started.thread_id).pending().get()
    if name == "release":
        services.claim_interrupt(users["supervisor"], interrupt.pk)
    path, data = FORMS[name](interrupt)
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["supervisor"])
    before = state()
    response = client.post(path, data)
    assert response.status_code == 403, (name, response.status_code)
    assert "CSRF" in response.content.decode()
    assert state() == before
    assert client.get("/").status_code == 200  # still signed in (logout refused too)


# The page routes FORMS posts to.
POSTED = {"answer", "decide", "keep-note", "bulk", "claim", "assign", "steer", "cancel",
          "recover", "fork", "fork-edit", "start-run", "cancel-at-breakpoint"}
READ_ONLY = {"inbox", "interrupt", "runs", "run", "timeline", "timeline-export", "tree-history",
             "audit", "audit-export", "audit-export-csv", "decisions", "decisions-export",
             "decisions-export-csv", "checkpoint", "start-form", "graph",
             "decision-link"}  # a GET that only redirects; a POST is 405


def test_every_page_route_is_either_posted_to_above_or_read_only() -> None:
    """A new route must be sorted into one of the two, so a new form gets its test."""
    from django.urls import URLPattern

    from forgeui.urls import pages

    assert {p.name for p in pages if isinstance(p, URLPattern)} == POSTED | READ_ONLY
