"""Notifications with teams: e-mail only to assignees who may read the interrupt in its
team, webhooks scoped to a team hear only its events, sensitive keys masked in both.

Finance owns the test graph ``custom``; ``transfer`` belongs to support. Webhook receivers
are refused destinations here (127.0.0.1, not allowed): only the deliveries made, and
their bodies, are looked at.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail

from forgeui.models import Interrupt, Webhook, WebhookDelivery
from forgeui.notifications import fanout
from forgeui.runs import deadlines, services
from forgeui.runs.policies import escalation
from forgeui.runs.policies.config import Policy
from forgeui.team.sensitive import MASK

pytestmark = pytest.mark.django_db(transaction=True)

TEAMS = {"finance": {"graphs": ["custom"]}, "support": {"graphs": ["transfer"]}}
IBAN = "DE89370400440532013000"
EVENTS = ["interrupt.created", "interrupt.answered", "run.completed"]


@pytest.fixture
def quiet_mail(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.FORGE_WEBHOOK_BACKOFF = []


@pytest.fixture
def on_duty(users: dict[str, User], quiet_mail: None) -> dict[str, User]:
    """Everyone in the group ``on-duty``: a finance and a support reviewer, a plain one."""
    duty = Group.objects.create(name="on-duty")
    made = dict(users)
    for name, role in (("fin", "finance:reviewer"), ("sup", "support:reviewer"),
                       ("plain", "reviewer")):
        made[name] = User.objects.create_user(name, email=f"{name}@example.com")
        made[name].groups.add(duty, Group.objects.get_or_create(name=role)[0])
    return made


def ask(user: User, graph: str = "custom", **payload: Any) -> Interrupt:
    started = services.start_run(user, graph, {
        "question": "Pay the invoice?", "payload": payload,
        "options": {"assignees": {"groups": ["on-duty"]}, "sensitive": ["iban", "question"]}})
    return Interrupt.objects.of_tree(started.thread_id).get()


def test_assignees_outside_the_interrupts_team_are_not_emailed(
        on_duty: dict[str, User], settings: Any) -> None:
    settings.FORGE_TEAMS = TEAMS
    ask(on_duty["supervisor"], iban=IBAN)
    fanout.fan_out()
    assert sorted(m.to[0] for m in mail.outbox) == ["fin@example.com", "plain@example.com"]
    for message in mail.outbox:  # the question was marked sensitive: not in the subject
        assert "Pay the invoice" not in message.subject and MASK in message.subject
        assert IBAN not in message.body


def test_an_unowned_interrupt_is_emailed_to_plain_roles_only(
        on_duty: dict[str, User], settings: Any) -> None:
    settings.FORGE_TEAMS = {"finance": {"graphs": ["transfer"]}}  # custom: no team's
    ask(on_duty["supervisor"])
    fanout.fan_out()
    assert [m.to for m in mail.outbox] == [["plain@example.com"]]


def test_without_teams_every_assignee_is_emailed_as_before(on_duty: dict[str, User]) -> None:
    ask(on_duty["supervisor"])
    fanout.fan_out()
    assert len(mail.outbox) == 3


def hooks() -> dict[str, Webhook]:
    return {team or "all": Webhook.objects.create(
        name=team or "all", url="http://127.0.0.1:9/hook", secret="k", events=EVENTS,
        team=team) for team in ("finance", "support", "")}


def test_a_teams_webhook_hears_only_its_teams_events_and_payloads_are_masked(
        on_duty: dict[str, User], settings: Any) -> None:
    settings.FORGE_TEAMS = TEAMS
    made = hooks()
    finance = ask(on_duty["supervisor"], iban=IBAN)
    support = ask(on_duty["supervisor"], "transfer")
    fanout.fan_out()
    told = {name: set(WebhookDelivery.objects.filter(webhook=hook)
                      .values_list("body__interrupt__id", flat=True))
            for name, hook in made.items()}
    assert told == {"finance": {finance.pk}, "support": {support.pk},
                    "all": {finance.pk, support.pk}}
    body = WebhookDelivery.objects.filter(webhook=made["finance"]).get().body
    assert body["team"] == "finance"
    assert body["interrupt"]["payload"]["iban"] == MASK and IBAN not in str(body)


def test_a_completed_runs_output_is_masked_where_its_interrupts_marked_keys(
        on_duty: dict[str, User], settings: Any) -> None:
    settings.FORGE_TEAMS = TEAMS
    made = hooks()
    finance = ask(on_duty["supervisor"], iban=IBAN)
    services.answer_interrupt(on_duty["fin"], finance.pk, {"iban": IBAN, "paid": True})
    fanout.fan_out()
    completed = WebhookDelivery.objects.get(webhook=made["finance"], event="run.completed")
    assert IBAN not in str(completed.body) and MASK in str(completed.body["run"]["output"])
    assert not WebhookDelivery.objects.filter(webhook=made["support"]).exists()


def test_an_overdue_interrupt_is_told_to_its_teams_supervisors_only(
        on_duty: dict[str, User], settings: Any) -> None:
    settings.FORGE_TEAMS = TEAMS
    for name, role in (("fin-boss", "finance:supervisor"), ("sup-boss", "support:supervisor"),
                       ("boss", "supervisor")):
        User.objects.create_user(name, email=f"{name}@example.com").groups.add(
            Group.objects.get_or_create(name=role)[0])
    interrupt = ask(on_duty["supervisor"])
    mail.outbox.clear()
    deadlines.notify_supervisors(interrupt.pk, "deadline passed")
    assert sorted(m.to[0] for m in mail.outbox) == ["boss@example.com", "fin-boss@example.com"]


def test_an_escalation_tells_only_the_group_members_who_may_read_it(
        on_duty: dict[str, User], settings: Any) -> None:
    settings.FORGE_TEAMS = TEAMS
    interrupt = ask(on_duty["supervisor"])
    mail.outbox.clear()
    policy = Policy(name="slow", escalate_to="on-duty", escalate_after_s=1)
    escalation._tell_group(interrupt.pk, policy)
    [message] = mail.outbox
    assert sorted(message.to) == ["fin@example.com", "plain@example.com"]
