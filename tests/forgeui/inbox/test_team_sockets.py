"""Teams on the inbox websocket: a row, a deletion or a signal about another team's
interrupt never reaches a socket, live or replayed; sockets follow their users' teams;
sensitive keys are masked for who may not answer.

Finance owns the demo graph ``transfer``, support owns ``deploy``. Frames are checked by
content: the other team's interrupt id must not appear in any of them.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User

from forgeui.inbox import broadcast, frames
from forgeui.inbox.broadcast import INBOX_GROUP, team_group
from forgeui.inbox.feed import EventFeed
from forgeui.inbox.hub import hub_of
from forgeui.models import Event, EventKind, Interrupt
from forgeui.models.events import EventDraft
from forgeui.team.sensitive import MASK
from tests.forgeui.inbox.test_consumers import (
    ANY_ROW,
    CURSOR,
    ROW,
    Connect,
    answer,
    caught_up,
    frame,
    frame_with,
    last_event,
    publish,
    session_cookie,
    started,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

TEAMS = {"finance": {"graphs": ["transfer"]}, "support": {"graphs": ["deploy"]}}
TEAM_USERS = {"fin": "finance:reviewer", "sup": "support:reviewer",
              "fin_auditor": "finance:auditor"}
IBAN = "DE89370400440532013000"
SHOWN = re.compile(r'<tr (?:hx-swap-oob="true" )?id="int-([0-9a-f]+)" class="row')  # added
# The fallback poll hands a socket what its groups did not bring after about a second:
# quiet for longer than that, nothing more is coming.
QUIET_S = 1.6


@pytest.fixture
def members(users: dict[str, User], settings: Any) -> dict[str, User]:
    """The plain-role users, and one reviewer of each team and finance's auditor."""
    settings.FORGE_TEAMS = TEAMS
    made = dict(users)
    for name, group in TEAM_USERS.items():
        made[name] = User.objects.create_user(name, password=name)
        made[name].groups.add(Group.objects.get_or_create(name=group)[0])
    return made


@pytest.fixture
def team_cookies(members: dict[str, User]) -> dict[str, str]:
    return {name: session_cookie(user) for name, user in members.items()}


async def everything(socket: WebsocketCommunicator, quiet: float = QUIET_S) -> str:
    """Every frame until the socket has been quiet for ``quiet`` seconds."""
    texts = []
    while not await socket.receive_nothing(timeout=quiet):
        texts.append(await frame(socket, 1))
    return "".join(texts)


async def watching(connect: Connect, cookie: str) -> Any:
    socket, connected, code = await connect(cookie)
    assert connected, code
    await caught_up(socket, await last_event())
    return socket


async def both_teams(members: dict[str, User]) -> tuple[Interrupt, Interrupt]:
    [finance] = await started(members, "transfer")
    [support] = await started(members, "deploy")
    return finance, support


def joined(user: User) -> set[str]:
    """The groups whose messages reach ``user``'s socket: those its loop's hub hands it
    and is itself a member of in the layer."""
    layer = get_channel_layer()
    hub = hub_of(layer)
    in_layer = {group for group, members in layer.groups.items() if hub.channel in members}
    return {group for group, sockets in hub.members.items()
            if group in in_layer and any(s.access_key[0] == user.pk for s in sockets)}


async def test_a_team_reviewer_hears_only_their_teams_rows_a_plain_one_all(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    fin = await watching(connect, team_cookies["fin"])
    plain = await watching(connect, team_cookies["reviewer"])
    finance, support = await both_teams(members)
    await answer(members["supervisor"], support.pk, True)
    heard = await everything(fin)
    assert finance.pk in ROW.findall(heard)
    assert support.pk not in heard  # no row, no deletion
    # Rows are rendered as things stand when their event is handled: the support row
    # may come as a replacement or a deletion only, but it comes.
    seen = await everything(plain, 0.5)
    assert {finance.pk, support.pk} <= set(ANY_ROW.findall(seen))


async def test_sockets_join_the_groups_of_the_teams_they_read(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    await watching(connect, team_cookies["fin"])
    await watching(connect, team_cookies["reviewer"])
    inbox_groups = {g for g in joined(members["fin"]) if g.startswith("inbox")}
    assert inbox_groups == {team_group("finance")}
    assert INBOX_GROUP in joined(members["reviewer"])
    assert team_group("finance") not in joined(members["reviewer"])


async def test_each_event_goes_to_its_teams_group_and_the_all_teams_group(
        members: dict[str, User]) -> None:
    """On the layer itself: a member of support's group is never told of finance's
    events (nor of what no team owns)."""
    layer = get_channel_layer()
    broadcast.serve_from(asyncio.get_running_loop())
    listeners = {group: await layer.new_channel() for group in
                 (INBOX_GROUP, team_group("support"))}
    for group, channel in listeners.items():
        await layer.group_add(group, channel)
    try:
        finance, support = await both_teams(members)
        await started(members, "nested")  # owned by no team
        heard = {group: await ids_heard(layer, channel) for group, channel in
                 listeners.items()}
    finally:
        for group, channel in listeners.items():
            await layer.group_discard(group, channel)
    about = await sync_to_async(interrupts_of)(heard[team_group("support")])
    assert about == {support.pk}
    everything_ids = await sync_to_async(interrupts_of)(heard[INBOX_GROUP])
    assert {finance.pk, support.pk} <= everything_ids and len(everything_ids) >= 3


async def ids_heard(layer: Any, channel: str) -> set[int]:
    found: set[int] = set()
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 1)
        except TimeoutError:
            return found
        found.update(message["event_ids"])


def interrupts_of(event_ids: set[int]) -> set[str]:
    return set(Event.objects.filter(pk__in=event_ids).exclude(interrupt_id="")
               .values_list("interrupt_id", flat=True))


async def test_a_replay_after_reconnect_is_filtered_the_same_way(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    before = await last_event()
    finance, support = await both_teams(members)
    await answer(members["supervisor"], support.pk, True)
    fin, _, _ = await connect(team_cookies["fin"])
    text = await caught_up(fin, before)
    assert ROW.findall(text) == [finance.pk]
    assert support.pk not in text
    plain, _, _ = await connect(team_cookies["reviewer"])
    replayed = await caught_up(plain, before)
    assert finance.pk in replayed and support.pk in replayed


async def test_only_the_teams_events_count_toward_the_replay_limit(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from forgeui.inbox import feed

    before = await last_event()
    for _ in range(3):
        await started(members, "deploy")
    [finance] = await started(members, "transfer")
    finance_events = await sync_to_async(
        Event.objects.filter(pk__gt=before, run_id=finance.run_id).count)()
    assert await last_event() - before > finance_events + 1
    monkeypatch.setattr(feed, "CATCH_UP_LIMIT", finance_events + 1)
    fin, _, _ = await connect(team_cookies["fin"])
    text = await caught_up(fin, before)  # support's many events do not make it reload
    assert ROW.findall(text) == [finance.pk]


async def test_a_run_page_socket_hears_nothing_of_another_teams_tree(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    [support] = await started(members, "deploy")
    [finance] = await started(members, "transfer")
    path = "/ws/inbox/?tree={}"
    fin, _, _ = await connect(team_cookies["fin"], path.format(support.root_thread_id))
    await fin.send_json_to({"after": 0})  # its whole history: nothing of it may come
    # Once the fallback poll runs, it hands this socket every event its groups missed.
    await asyncio.sleep(EventFeed.POLL_SECONDS + 0.2)
    await answer(members["supervisor"], support.pk, True)
    assert await fin.receive_nothing(timeout=QUIET_S)
    own, _, _ = await connect(team_cookies["fin"], path.format(finance.root_thread_id))
    await own.send_json_to({"after": 0})
    assert 'id="tree-changed"' in await frame(own)  # its own team's tree: heard


async def test_a_socket_follows_its_user_into_another_team(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    fin = await watching(connect, team_cookies["fin"])
    support_reviewers = await sync_to_async(Group.objects.get)(name="support:reviewer")
    await sync_to_async(members["fin"].groups.add)(support_reviewers)
    for _ in range(50):  # the recheck message is handled by the socket's own loop
        if team_group("support") in joined(members["fin"]):
            break
        await asyncio.sleep(0.05)
    assert team_group("support") in joined(members["fin"])
    [support] = await started(members, "deploy")
    text = await frame_with(fin, ROW)
    assert ROW.search(text).group(1) == support.pk


async def test_a_team_joined_without_signals_is_followed_within_two_seconds(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    """Another process changed the groups on a layer that does not reach this one."""
    await watching(connect, team_cookies["fin"])
    support_reviewers = await sync_to_async(Group.objects.get)(name="support:reviewer")
    await sync_to_async(User.groups.through.objects.create)(
        user=members["fin"], group=support_reviewers)
    for _ in range(40):
        if team_group("support") in joined(members["fin"]):
            break
        await asyncio.sleep(0.05)
    assert team_group("support") in joined(members["fin"])


async def test_a_socket_whose_user_leaves_a_team_reloads_its_page(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    fin = await watching(connect, team_cookies["fin"])
    auditors = await sync_to_async(Group.objects.get_or_create)(name="support:auditor")
    reviewers = await sync_to_async(Group.objects.get)(name="finance:reviewer")
    await sync_to_async(members["fin"].groups.add)(auditors[0])
    await sync_to_async(members["fin"].groups.remove)(reviewers)
    message = await fin.receive_output(timeout=3)
    while message["type"] != "websocket.close":
        message = await fin.receive_output(timeout=3)
    assert message["code"] == frames.RELOAD


async def test_a_team_role_keeps_the_socket_open_on_the_once_a_second_check(
        connect: Connect, team_cookies: dict[str, str]) -> None:
    fin = await watching(connect, team_cookies["fin"])
    assert await fin.receive_nothing(timeout=1.5)  # the watcher has judged it: still open


@sync_to_async
def make_sensitive(interrupt: Interrupt) -> None:
    Interrupt.objects.filter(pk=interrupt.pk).update(
        payload={"question": "Approve this transfer?", "iban": IBAN}, sensitive=["iban"])


async def test_sensitive_keys_are_masked_for_who_may_not_answer_in_the_team(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    before = await last_event()
    [finance] = await started(members, "transfer")
    await make_sensitive(finance)
    auditor = await watching(connect, team_cookies["fin_auditor"])
    fin = await watching(connect, team_cookies["fin"])
    await publish([EventDraft(EventKind.INTERRUPT_UPDATED, finance.run_id,
                              finance.root_thread_id, finance.pk)])
    masked = await frame_with(auditor, ROW)
    assert IBAN not in masked and MASK in masked and finance.pk in masked
    whole = await frame_with(fin, ROW)
    assert IBAN in whole and MASK not in whole
    again, _, _ = await connect(team_cookies["fin_auditor"])
    replayed = await caught_up(again, before)
    assert finance.pk in ROW.findall(replayed) and IBAN not in replayed
    assert int(CURSOR.search(replayed).group(1)) > before


async def test_a_search_never_finds_a_row_by_a_value_shown_masked(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    [finance] = await started(members, "transfer")
    await make_sensitive(finance)
    path = f"/ws/inbox/?q={IBAN[:10]}"
    sockets = {}
    for name in ("fin_auditor", "fin"):
        sockets[name], _, _ = await connect(team_cookies[name], path)
        await caught_up(sockets[name], await last_event())
    await publish([EventDraft(EventKind.INTERRUPT_UPDATED, finance.run_id,
                              finance.root_thread_id, finance.pk)])
    assert ROW.search(await frame_with(sockets["fin"], ROW)).group(1) == finance.pk
    assert finance.pk not in ROW.findall(await everything(sockets["fin_auditor"], 1))


async def test_the_queue_holds_only_rows_of_teams_the_viewer_answers_in(
        connect: Connect, team_cookies: dict[str, str], members: dict[str, User]) -> None:
    support_auditors = await sync_to_async(Group.objects.get_or_create)(name="support:auditor")
    await sync_to_async(members["fin"].groups.add)(support_auditors[0])
    queue, _, _ = await connect(team_cookies["fin"], "/ws/inbox/?tab=queue")
    await caught_up(queue, await last_event())
    everything_socket = await watching(connect, team_cookies["fin"])
    finance, support = await both_teams(members)
    queued = SHOWN.findall(await everything(queue))  # a deletion shows nothing
    assert finance.pk in queued and support.pk not in queued
    # The support row still shows on the other tab: the viewer reads it there.
    assert support.pk in ANY_ROW.findall(await everything(everything_socket, 0.5))
