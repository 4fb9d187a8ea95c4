"""Which channel a message goes to: a policy's, the asking token's agent's, a graph's
node's or graph's own, else the default; none at all, no message."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import checks
from django.test import override_settings

from forgeui.requests import service
from forgeui.runs import services
from forgeui.slack.channels import check_channels
from forgeui.slack.models import SlackMessage
from tests.forgeui.slack.conftest import CHANNEL, pending
from tests.forgeui.slack.standin import SlackStandIn

pytestmark = pytest.mark.django_db(transaction=True)

CHANNELS = {"graph:custom": "C-CUSTOM", "graph:signoff/sign": "C-SIGN",
            "policy:payments": "C-PAY", "agent:ops-bot": "C-OPS"}
ASK = {"actions": [{"name": "deploy", "args": {"version": "2.4.0"}}]}


def posted_to(interrupt_id: str, slack: SlackStandIn) -> str:
    row = SlackMessage.objects.get(interrupt_id=interrupt_id)
    assert any(c.args.get("channel") == row.channel for c in slack.of("chat.postMessage"))
    return row.channel


@override_settings(FORGE_SLACK_CHANNELS=CHANNELS)
def test_a_graph_node_and_graph_name_their_channels(users: dict[str, User],
                                                    slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    assert posted_to(pending("custom").pk, slack) == "C-CUSTOM"
    services.start_run(users["supervisor"], "signoff", {"payload": {}})
    assert posted_to(pending("signoff").pk, slack) == "C-SIGN"
    services.start_run(users["supervisor"], "guarded", {"version": "1", "ledger": "/dev/null"})
    assert posted_to(pending("guarded").pk, slack) == CHANNEL  # the default


@override_settings(FORGE_SLACK_CHANNELS=CHANNELS, FORGE_POLICIES={
    "payments": {"nodes": ["signoff/sign"], "approvals": 2}})
def test_a_policy_names_its_channel_before_the_graph(users: dict[str, User],
                                                     slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "signoff", {"payload": {}})
    assert posted_to(pending("signoff").pk, slack) == "C-PAY"


@override_settings(FORGE_SLACK_CHANNELS=CHANNELS)
def test_an_agent_is_routed_by_its_token_not_the_name_it_gives(
        users: dict[str, User], slack: SlackStandIn) -> None:
    service.create(service.Caller(users["supervisor"], agent="ops-bot"), ASK)
    assert posted_to(pending("forge.request").pk, slack) == "C-OPS"
    SlackMessage.objects.all().delete()
    service.create(service.Caller(users["supervisor"], agent="intruder"),
                   {**ASK, "agent": {"name": "ops-bot"}})
    [other] = SlackMessage.objects.all()
    assert other.channel == CHANNEL


@override_settings(FORGE_SLACK_CHANNELS={"graph:custom": "C-CUSTOM"})
def test_without_a_default_only_named_ones_are_posted(users: dict[str, User],
                                                      slack: SlackStandIn,
                                                      settings: Any) -> None:
    settings.FORGE_SLACK_CHANNEL = ""
    services.start_run(users["supervisor"], "custom", {"question": "Ship it?"})
    services.start_run(users["supervisor"], "signoff", {"payload": {}})
    assert [m.channel for m in SlackMessage.objects.all()] == ["C-CUSTOM"]


def test_the_setting_is_checked_at_start() -> None:
    for bad in ("not json", {"graph:": "C1"}, {"room:x": "C1"}, {"graph:x": ""}, ["C1"]):
        with override_settings(FORGE_SLACK_CHANNELS=bad):
            [error] = check_channels()
            assert error.id == "forgeui.E040" and error.level == checks.ERROR, bad
    with override_settings(FORGE_SLACK_CHANNELS=CHANNELS):
        assert check_channels() == []


@override_settings(FORGE_SLACK_CHANNELS={"graph:custom": "@assignees"})
def test_assignees_are_asked_in_their_direct_messages(users: dict[str, User],
                                                      slack: SlackStandIn) -> None:
    from django.contrib.auth.models import Group

    from forgeui.slack.models import SlackLink

    ops = Group.objects.create(name="ops")
    alice = User.objects.create_user("alice", password="alice")
    alice.groups.add(Group.objects.get(name="reviewer"), ops)
    SlackLink.objects.create(user=users["reviewer"], slack_user_id="U-REVIEWER")
    SlackLink.objects.create(user=alice, slack_user_id="U-ALICE")
    assignees = {"users": ["reviewer"], "groups": ["ops"]}
    services.start_run(users["supervisor"], "custom", {
        "question": "Ship it?", "options": {"assignees": assignees}})
    interrupt = pending("custom")
    posted = {c.args["channel"] for c in slack.of("chat.postMessage")}
    assert posted == {"U-REVIEWER", "U-ALICE"}  # one message in each DM
    assert sorted(SlackMessage.objects.filter(interrupt=interrupt).values_list(
        "route", flat=True)) == ["U-ALICE", "U-REVIEWER"]
    services.answer_interrupt(users["reviewer"], interrupt.pk, True)
    updated = {c.args["channel"] for c in slack.of("chat.update")}
    assert updated == {"U-REVIEWER", "U-ALICE"}  # both say who decided, buttons gone


@override_settings(FORGE_SLACK_CHANNELS={"graph:custom": "@assignees"})
def test_with_no_assignee_linked_the_default_channel_is_asked(users: dict[str, User],
                                                               slack: SlackStandIn) -> None:
    services.start_run(users["supervisor"], "custom", {
        "question": "Ship it?", "options": {"assignees": {"users": ["reviewer"]}}})
    assert [c.args["channel"] for c in slack.of("chat.postMessage")] == [CHANNEL]
