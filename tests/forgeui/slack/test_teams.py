"""Slack with teams: each team's interrupts go to its channel, sensitive keys are masked
in every message, and a press counts only from someone who may answer in the
interrupt's team.

Finance owns the test graph ``custom`` and the agent ``ops-bot``.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core import checks
from django.test import override_settings

from forgeui.models import Answer, Interrupt
from forgeui.requests import service
from forgeui.runs import services
from forgeui.slack import linking
from forgeui.slack.channels import check_channels
from forgeui.slack.models import LinkedVia, SlackMessage
from forgeui.team.sensitive import MASK
from tests.forgeui.slack.conftest import ephemerals, message_of, pending, press
from tests.forgeui.slack.standin import SlackStandIn, text_of

pytestmark = pytest.mark.django_db(transaction=True)

TEAMS = {"finance": {"graphs": ["custom"], "agents": ["ops-bot"]}}
CHANNELS = {"graph:custom": "C-CUSTOM", "team:finance": "C-FIN", "agent:ops-bot": "C-OPS"}
IBAN = "DE89370400440532013000"
ASK = {"actions": [{"name": "pay", "args": {"amount": 5}}]}


@pytest.fixture
def teams(settings: Any) -> None:
    settings.FORGE_TEAMS = TEAMS


def ask(user: User, **payload: Any) -> Interrupt:
    services.start_run(user, "custom", {"question": "Pay it?", "payload": payload,
                                        "options": {"sensitive": ["iban"]}})
    return pending("custom")


def member(name: str, group: str, slack_user: str) -> User:
    user = User.objects.create_user(name, password=name)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    linking.link(user, slack_user, "T1", LinkedVia.COMMAND, by=None)
    return user


@override_settings(FORGE_SLACK_CHANNELS=CHANNELS)
def test_a_teams_interrupts_go_to_its_channel_before_the_graphs(
        users: dict[str, User], slack: SlackStandIn, teams: None) -> None:
    interrupt = ask(users["supervisor"])
    assert SlackMessage.objects.get(interrupt=interrupt).channel == "C-FIN"


@override_settings(FORGE_SLACK_CHANNELS=CHANNELS)
def test_the_agents_channel_comes_before_its_teams(
        users: dict[str, User], slack: SlackStandIn, teams: None) -> None:
    service.create(service.Caller(users["supervisor"], agent="ops-bot"), ASK)
    request = pending("forge.request")
    assert request.team == "finance"
    assert SlackMessage.objects.get(interrupt=request).channel == "C-OPS"


def test_a_team_key_passes_the_settings_check(settings: Any, teams: None) -> None:
    settings.FORGE_SLACK_CHANNELS = {"team:finance": "C-FIN"}
    assert check_channels() == []
    settings.FORGE_SLACK_CHANNELS = {"team:": "C-FIN"}
    [error] = check_channels()
    assert error.id == "forgeui.E040" and error.level == checks.ERROR
    settings.FORGE_SLACK_CHANNELS = {"team:fnance": "C-FIN"}  # a typo: never matches
    [warning] = check_channels()
    assert warning.id == "forgeui.W040" and "'team:fnance'" in warning.msg


def test_sensitive_keys_are_masked_in_the_message(
        users: dict[str, User], slack: SlackStandIn, teams: None) -> None:
    interrupt = ask(users["supervisor"], iban=IBAN, amount=120)
    shown = message_of(slack, interrupt.pk)
    text = text_of(shown["blocks"]) + shown["text"]
    assert IBAN not in text and MASK in text and "120" in text
    # The decision too: an answer repeating the key is masked in the ended message.
    services.answer_interrupt(users["reviewer"], interrupt.pk, {"iban": IBAN})
    ended = message_of(slack, interrupt.pk)
    assert IBAN not in text_of(ended["blocks"]) + ended["text"]


def test_a_press_counts_only_from_who_may_answer_in_the_team(
        users: dict[str, User], slack: SlackStandIn, teams: None) -> None:
    interrupt = ask(users["supervisor"])
    member("sam", "support:reviewer", "U-SUP")
    member("ada", "finance:auditor", "U-AUD")
    member("fay", "finance:reviewer", "U-FIN")
    press(slack, interrupt.pk, "approve", "U-SUP")
    assert ephemerals(slack, "U-SUP") == ["This interrupt no longer exists in forge."]
    press(slack, interrupt.pk, "reject", "U-AUD")  # a form: opened only for who may answer
    assert not slack.of("views.open")
    assert "do not let you answer" in ephemerals(slack, "U-AUD")[-1]
    assert not Answer.objects.filter(interrupt=interrupt).exists()
    press(slack, interrupt.pk, "approve", "U-FIN")
    assert Answer.objects.get(interrupt=interrupt).user.get_username() == "fay"
