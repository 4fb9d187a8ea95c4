"""The inbox websocket through the real ASGI stack (``forgeui.asgi.application``).

Channels' ``WebsocketCommunicator`` drives the same middleware daphne serves (origin
checks, session auth) on the in-memory channel layer the embedded default uses; rows come
from real runs of the demo graphs, started and answered through ``forgeui.runs.services``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels import consumer as consumer_module
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.test import Client

from forgeui.asgi import application
from forgeui.inbox import broadcast, feed, frames
from forgeui.inbox.broadcast import INBOX_MESSAGE_TYPE
from forgeui.inbox.hub import Hub, hub_of
from forgeui.inbox.origins import same_origin
from forgeui.models import Event, Interrupt
from forgeui.models.events import EventDraft
from forgeui.models.events import publish as publish_sync
from forgeui.runs import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

HOST = "localhost:8000"  # in ALLOWED_HOSTS of the settings the application was built with
ORIGIN = f"http://{HOST}"
ROW = re.compile(r'<tr id="int-([0-9a-f]+)" class="row')
DELETED = re.compile(r'<tr id="int-([0-9a-f]+)" hx-swap-oob="delete">')
ANY_ROW = re.compile(r'<tr[^>]* id="int-([0-9a-f]+)"')  # added or replaced
CURSOR = re.compile(r'id="inbox-cursor" data-event-id="(\d+)"')


def session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def headers(cookie: str | None = None, origin: str | None = ORIGIN, host: str = HOST,
            extra: list[tuple[bytes, bytes]] | None = None) -> list[tuple[bytes, bytes]]:
    found = [(b"host", host.encode())]
    if origin is not None:
        found.append((b"origin", origin.encode()))
    if cookie is not None:
        found.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return found + (extra or [])


Connect = Callable[..., Any]


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """Open sockets; every one still open is closed when the test ends."""
    opened: list[WebsocketCommunicator] = []

    async def open_socket(cookie: str | None, path: str = "/ws/inbox/",
                          **kwargs: Any) -> tuple[WebsocketCommunicator, bool, Any]:
        socket = WebsocketCommunicator(application, path, headers=headers(cookie, **kwargs))
        connected, code = await socket.connect(timeout=5)
        if connected:
            opened.append(socket)
        return socket, connected, code

    yield open_socket
    for socket in opened:
        await socket.disconnect()


@pytest.fixture
def cookies(users: dict[str, User]) -> dict[str, str]:
    return {name: session_cookie(user) for name, user in users.items()}


async def frame(socket: WebsocketCommunicator, wait: float = 3) -> str:
    return await socket.receive_from(timeout=wait)


async def frame_with(socket: WebsocketCommunicator, pattern: re.Pattern[str],
                     wait: float = 5) -> str:
    """The next frame matching ``pattern`` (frames about other events are skipped)."""
    deadline = asyncio.get_running_loop().time() + wait
    while (left := deadline - asyncio.get_running_loop().time()) > 0:
        text = await frame(socket, left)
        if pattern.search(text):
            return text
    raise AssertionError(f"no frame matching {pattern.pattern}")


async def caught_up(socket: WebsocketCommunicator, after: int = 0) -> str:
    await socket.send_json_to({"after": after})
    return await frame(socket)


start_run = sync_to_async(services.start_run)
answer = sync_to_async(services.answer_interrupt)
last_event = sync_to_async(Event.objects.last_id)
publish = sync_to_async(publish_sync)


@sync_to_async
def pending_of(thread_id: str) -> list[Interrupt]:
    return list(Interrupt.objects.of_tree(thread_id).pending().by_age())


async def started(users: dict[str, User], graph: str = "transfer") -> list[Interrupt]:
    run = await start_run(users["supervisor"], graph, {"amount": 5})
    return await pending_of(run.thread_id)


# -- who may connect ------------------------------------------------------------------------


async def test_an_anonymous_socket_is_refused(connect: Connect) -> None:
    _, connected, _ = await connect(None)
    assert not connected


async def test_a_user_without_a_role_is_refused(connect: Connect, cookies: dict[str, str]) -> None:
    _, connected, _ = await connect(cookies["nobody"])
    assert not connected


async def test_a_stale_session_cookie_is_refused(connect: Connect) -> None:
    _, connected, _ = await connect("not-a-session")
    assert not connected


@pytest.mark.parametrize("name", ["reviewer", "supervisor", "auditor"])
async def test_each_role_connects_from_the_site_itself(connect: Connect, cookies: dict[str, str],
                                                      name: str) -> None:
    socket, connected, _ = await connect(cookies[name])
    assert connected
    assert CURSOR.search(await caught_up(socket))


@pytest.mark.parametrize("origin", [
    "http://evil.example",          # another domain
    "http://localhost.evil.example",  # a look-alike subdomain of another domain
    "http://evil-localhost:8000",   # a look-alike name
    "https://localhost:8000",       # wrong scheme
    "http://localhost:8001",        # wrong port
    "http://localhost",             # wrong (default) port
    "null",                         # sandboxed iframes, file:// pages
    "",                             # empty
    None,                           # missing
    "http://localhost:8000/path",   # not an origin at all
])
async def test_handshakes_from_other_origins_are_refused(connect: Connect, cookies: dict[str, str],
                                                        origin: str | None) -> None:
    _, connected, _ = await connect(cookies["reviewer"], origin=origin)
    assert not connected


async def test_two_origin_headers_are_refused(connect: Connect, cookies: dict[str, str]) -> None:
    _, connected, _ = await connect(cookies["reviewer"],
                                    extra=[(b"origin", b"http://evil.example")])
    assert not connected


async def test_an_allowed_host_on_its_own_port_is_accepted(connect: Connect,
                                                          cookies: dict[str, str]) -> None:
    for host in ("127.0.0.1:9000", "localhost"):
        _, connected, _ = await connect(cookies["reviewer"], host=host, origin=f"http://{host}")
        assert connected, host


async def test_a_host_outside_allowed_hosts_is_refused_even_same_origin(
        connect: Connect, cookies: dict[str, str]) -> None:
    _, connected, _ = await connect(cookies["reviewer"], host="evil.example",
                                    origin="http://evil.example")
    assert not connected


# -- what it pushes -------------------------------------------------------------------------


async def test_a_new_interrupt_arrives_and_leaves_when_answered(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    await caught_up(socket, await last_event())
    [pending] = await started(users)
    text = await frame_with(socket, ROW)
    assert ROW.search(text).group(1) == pending.pk
    assert 'hx-swap-oob="beforeend:#inbox-rows"' in text  # the default order: oldest first
    assert 'value="approve"' in text  # a reviewer may answer from the row
    assert int(CURSOR.search(text).group(1)) > 0
    await answer(users["supervisor"], pending.pk, True)
    text = await frame_with(socket, DELETED)
    assert DELETED.search(text).group(1) == pending.pk


async def test_an_auditor_gets_rows_without_answer_buttons(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["auditor"])
    await caught_up(socket, await last_event())
    await started(users)
    text = await frame_with(socket, ROW)
    assert "hx-post" not in text and 'value="approve"' not in text and ">View<" in text


async def test_payloads_are_escaped_in_pushed_rows(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    await caught_up(socket, await last_event())
    run = await start_run(users["supervisor"], "nested", {"x": "<script>alert(1)</script>"})
    text = await frame_with(socket, ROW)
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert run.thread_id


async def test_filters_keep_other_rows_out(connect: Connect, cookies: dict[str, str],
                                           users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"], "/ws/inbox/?graph=deploy&sort=oldest")
    await caught_up(socket, await last_event())
    await started(users, "transfer")
    assert not ROW.search(await frame(socket))  # the cursor moves, no row
    [deploy] = await started(users, "deploy")
    text = await frame_with(socket, ROW)
    assert ROW.search(text).group(1) == deploy.pk
    assert 'hx-swap-oob="beforeend:#inbox-rows"' in text  # oldest first: new rows go last


async def test_a_namespace_filter_matches_the_run_tree_path(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    path = "/ws/inbox/?namespace=supervisor/writer_agent"
    socket, _, _ = await connect(cookies["reviewer"], path)
    await caught_up(socket, await last_event())
    pending = await started(users, "supervisor")
    writer = next(i for i in pending if i.sub_agent_id == "writer_agent")
    seen: set[str] = set()
    while not await socket.receive_nothing(timeout=1):  # a frame per batch of the run's events
        seen.update(ROW.findall(await frame(socket, 1)))
    assert seen == {writer.pk}


async def test_reconnecting_catches_up_on_what_was_missed(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    before = int(CURSOR.search(await caught_up(socket, await last_event())).group(1))
    await socket.disconnect()
    [answered] = await started(users)
    [waiting] = await started(users, "deploy")
    await answer(users["supervisor"], answered.pk, True)

    again, _, _ = await connect(cookies["reviewer"])
    text = await caught_up(again, before)
    assert ROW.findall(text) == [waiting.pk]       # still pending: a row
    assert answered.pk in DELETED.findall(text)     # answered meanwhile: no row
    assert int(CURSOR.search(text).group(1)) == await last_event()


async def test_events_no_layer_message_announced_still_arrive_within_a_second(
        connect: Connect, cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process on the in-memory layer: its events reach only the database."""
    socket, _, _ = await connect(cookies["reviewer"])
    await caught_up(socket, await last_event())
    monkeypatch.setattr(broadcast._outbox, "send", lambda event_ids: None)
    [pending] = await started(users)
    loop = asyncio.get_running_loop()
    begun = loop.time()
    text = await frame_with(socket, ROW, wait=3)
    assert ROW.search(text).group(1) == pending.pk
    assert loop.time() - begun < 1.5


async def test_live_events_that_show_a_page_nothing_send_it_nothing(
        connect: Connect, cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No frame for what a page does not show; its cursor goes out with the next frame.
    Inbox events skip channels' per-message hop to close stale connections."""
    hops: list[int] = []
    close_old = consumer_module.aclose_old_connections

    async def counted() -> None:
        hops.append(1)
        await close_old()

    monkeypatch.setattr(consumer_module, "aclose_old_connections", counted)
    socket, _, _ = await connect(cookies["reviewer"])
    await caught_up(socket, await last_event())
    hops.clear()
    await publish([EventDraft("run.updated", "no-such-run", "no-such-thread")])
    assert await socket.receive_nothing(timeout=1)  # it shows nothing: no frame
    [shown] = await started(users)
    frames = []
    while not await socket.receive_nothing(timeout=1):
        frames.append(await frame(socket))
    assert frames and all(set(ANY_ROW.findall(text)) == {shown.pk} for text in frames)
    assert int(CURSOR.search(frames[-1]).group(1)) == await last_event()
    assert hops == []


async def test_catching_up_from_the_current_cursor_sends_nothing_new(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    await started(users)
    socket, _, _ = await connect(cookies["reviewer"])
    text = await caught_up(socket, await last_event())
    assert not ROW.search(text) and not DELETED.search(text)


async def test_malformed_client_messages_are_ignored(connect: Connect,
                                                     cookies: dict[str, str]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    for message in ({"after": "7; drop"}, {"after": -1}, {"after": True}, ["after"]):
        await socket.send_json_to(message)
    assert await socket.receive_nothing(timeout=0.3)
    assert CURSOR.search(await caught_up(socket))  # still working


async def test_a_run_page_socket_hears_only_its_own_tree(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    [mine] = await started(users, "deploy")
    socket, _, _ = await connect(cookies["supervisor"], f"/ws/inbox/?tree={mine.root_thread_id}")
    await socket.send_json_to({"after": await last_event()})
    await started(users, "transfer")
    assert await socket.receive_nothing(timeout=0.5)
    await answer(users["supervisor"], mine.pk, True)
    text = await frame(socket)
    assert 'id="tree-changed"' in text and "<tr" not in text


claim = sync_to_async(services.claim_interrupt)
INTERRUPT_SIGNAL = re.compile(r'id="interrupt-changed" data-event-id="(\d+)"')


async def test_an_interrupt_page_socket_hears_only_its_own_interrupt(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    mine, sibling = await started(users, "supervisor")
    socket, _, _ = await connect(cookies["auditor"], f"/ws/inbox/?interrupt={mine.pk}")
    await socket.send_json_to({"after": await last_event()})
    await answer(users["reviewer"], sibling.pk, {"type": "accept"})  # same tree, not this one
    await started(users, "transfer")
    assert await socket.receive_nothing(timeout=0.5)
    await claim(users["supervisor"], mine.pk)
    text = await frame(socket)
    assert INTERRUPT_SIGNAL.search(text) and "<tr" not in text and "tree-changed" not in text
    before = int(INTERRUPT_SIGNAL.search(text).group(1))
    await answer(users["supervisor"], mine.pk, {"type": "accept"})
    assert int(INTERRUPT_SIGNAL.search(await frame(socket)).group(1)) > before


async def test_an_interrupt_page_catches_up_on_an_answer_it_missed(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    [asked] = await started(users)
    cursor = await last_event()
    await answer(users["supervisor"], asked.pk, True)  # while the page was away
    socket, _, _ = await connect(cookies["reviewer"], f"/ws/inbox/?interrupt={asked.pk}")
    assert INTERRUPT_SIGNAL.search(await caught_up(socket, cursor))
    other, _, _ = await connect(cookies["reviewer"], "/ws/inbox/?interrupt=0123456789abcdef")
    await other.send_json_to({"after": cursor})
    assert await other.receive_nothing(timeout=0.5)  # an unknown interrupt hears nothing


@pytest.mark.parametrize("path", ["/ws/inbox/?interrupt=0123456789abcdef",
                                  "/ws/inbox/?tree=0123456789abcdef"])
async def test_watching_sockets_keep_the_inbox_checks(
        connect: Connect, cookies: dict[str, str], users: dict[str, User], path: str) -> None:
    assert not (await connect(None, path))[1]
    assert not (await connect(cookies["nobody"], path))[1]
    assert not (await connect(cookies["auditor"], path, origin="http://evil.example"))[1]
    socket, connected, _ = await connect(cookies["reviewer"], path)
    assert connected
    group = await sync_to_async(Group.objects.get)(name="reviewer")
    await sync_to_async(users["reviewer"].groups.remove)(group)
    assert await closed_within(socket, 2) == 4403


# -- losing access closes the socket --------------------------------------------------------


async def closed_within(socket: WebsocketCommunicator, seconds: float) -> int:
    message = await socket.receive_output(timeout=seconds)
    while message["type"] == "websocket.send":  # rows may still be on their way
        message = await socket.receive_output(timeout=seconds)
    assert message["type"] == "websocket.close"
    return message.get("code")


async def test_logging_out_closes_that_sessions_socket(connect: Connect,
                                                       users: dict[str, User]) -> None:
    client = Client()
    await sync_to_async(client.force_login)(users["reviewer"])
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    other = await sync_to_async(session_cookie)(users["supervisor"])
    socket, _, _ = await connect(cookie)
    bystander, _, _ = await connect(other)
    await sync_to_async(client.post)("/accounts/logout/")
    assert await closed_within(socket, 2) == 4401
    assert await bystander.receive_nothing(timeout=0.3)


async def test_losing_the_role_closes_the_socket(connect: Connect, cookies: dict[str, str],
                                                 users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    group = await sync_to_async(Group.objects.get)(name="reviewer")
    await sync_to_async(users["reviewer"].groups.remove)(group)
    assert await closed_within(socket, 2) == 4403


async def test_emptying_the_group_closes_its_members_sockets(
        connect: Connect, cookies: dict[str, str]) -> None:
    socket, _, _ = await connect(cookies["auditor"])
    group = await sync_to_async(Group.objects.get)(name="auditor")
    await sync_to_async(group.user_set.clear)()
    assert await closed_within(socket, 2) == 4403


async def test_deactivating_the_user_closes_the_socket(connect: Connect, cookies: dict[str, str],
                                                       users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["supervisor"])
    user = users["supervisor"]
    user.is_active = False
    await sync_to_async(user.save)()
    assert await closed_within(socket, 2) == 4401


async def test_a_session_deleted_behind_our_back_closes_within_two_seconds(
        connect: Connect, cookies: dict[str, str]) -> None:
    """No signal fires for this (like a change made in another process): the re-check."""
    socket, _, _ = await connect(cookies["reviewer"])
    await sync_to_async(Session.objects.filter(session_key=cookies["reviewer"]).delete)()
    assert await closed_within(socket, 2) == 4401


async def test_a_role_lost_without_signals_closes_within_two_seconds(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    through = User.groups.through
    await sync_to_async(through.objects.filter(user=users["reviewer"]).delete)()
    assert await closed_within(socket, 2) == 4403


REPLACED = re.compile(r'<tr hx-swap-oob="true" id="int-([0-9a-f]+)" class="row')


async def test_a_row_whose_run_moved_on_is_replaced_in_place(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    pending = await started(users, "parallel_approvals")
    legal = next(i for i in pending if i.node == "legal")
    finance = next(i for i in pending if i.node == "finance")
    socket, _, _ = await connect(cookies["reviewer"])
    await caught_up(socket, await last_event())
    await answer(users["supervisor"], legal.pk, {"type": "accept", "args": None})
    text = await frame_with(socket, REPLACED)
    assert REPLACED.search(text).group(1) == finance.pk
    moved = await sync_to_async(Interrupt.objects.get)(pk=finance.pk)
    assert moved.checkpoint_id != finance.checkpoint_id and moved.checkpoint_id[:8] in text


async def test_a_reviewer_made_auditor_keeps_the_socket_but_loses_the_buttons(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    await caught_up(socket, await last_event())
    reviewer = users["reviewer"]
    reviewers = await sync_to_async(Group.objects.get)(name="reviewer")
    auditors = await sync_to_async(Group.objects.get)(name="auditor")
    await sync_to_async(reviewer.groups.add)(auditors)
    await sync_to_async(reviewer.groups.remove)(reviewers)
    assert await socket.receive_nothing(timeout=0.5)  # still connected: auditors read
    await started(users)
    text = await frame_with(socket, ROW)
    assert 'value="approve"' not in text and ">View<" in text


def scope(origin: str, host: str = HOST, scheme: str = "ws") -> dict[str, Any]:
    return {"type": "websocket", "scheme": scheme,
            "headers": [(b"host", host.encode()), (b"origin", origin.encode())]}


def test_same_origin_compares_scheme_host_and_port() -> None:
    assert same_origin(scope("http://localhost:8000"))
    assert same_origin(scope("HTTP://LOCALHOST:8000/"))
    assert same_origin(scope("https://forge.example", "forge.example", "wss"))
    assert same_origin(scope("https://forge.example:443", "forge.example", "wss"))
    assert not same_origin(scope("http://forge.example", "forge.example", "wss"))
    assert same_origin(scope("http://[::1]:8000", "[::1]:8000"))
    for origin in ("http://localhost:80", "http://user@localhost:8000", "http://localhost:8000?x",
                   "http://localhost:99999", "ws://localhost:8000", "localhost:8000"):
        assert not same_origin(scope(origin)), origin


def test_extra_origins_come_from_the_setting(settings: Any) -> None:
    """A TLS proxy in front of daphne: the browser says https, the socket is plain ws."""
    assert not same_origin(scope("https://localhost"))
    settings.FORGE_WS_ORIGINS = ["https://localhost"]
    assert same_origin(scope("https://localhost"))


async def test_an_event_the_layer_dropped_still_reaches_every_socket(
        connect: Connect, cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Redis layer drops a channel's oldest messages when its queue is full: a hub
    that fell behind loses them for all its sockets. What was heard is kept per socket,
    so the feed's poll still brings the event to each of them."""
    dropped: list[dict[str, Any]] = []

    async def lossy(self: Hub, message: dict[str, Any]) -> None:
        dropped.append(message)  # the layer dropped it before the hub could read it

    monkeypatch.setattr(Hub, "hand", lossy)
    first, _, _ = await connect(cookies["reviewer"])
    second, _, _ = await connect(cookies["reviewer"])
    for socket in (first, second):
        await caught_up(socket, await last_event())
    [pending] = await started(users)
    assert ROW.search(await frame_with(first, ROW, wait=3)).group(1) == pending.pk
    assert ROW.search(await frame_with(second, ROW, wait=3)).group(1) == pending.pk
    assert any(m["type"] == INBOX_MESSAGE_TYPE for m in dropped)


async def test_the_hub_hands_one_group_message_to_each_of_its_sockets(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    """However many sockets a loop has, the layer holds one member per inbox group for
    them, and a message to the group reaches every socket."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    sockets = [(await connect(cookies["reviewer"]))[0] for _ in range(3)]
    for socket in sockets:
        await caught_up(socket, await last_event())
    hub = hub_of(layer)
    members = layer.groups[broadcast.INBOX_GROUP]
    assert hub.channel in members and len(hub.members[broadcast.INBOX_GROUP]) == 3
    assert {c.channel_name for c in hub.members[broadcast.INBOX_GROUP]}.isdisjoint(members)
    [pending] = await started(users)
    for socket in sockets:
        assert ROW.search(await frame_with(socket, ROW, wait=3)).group(1) == pending.pk
    await sockets[0].disconnect()
    assert len(hub.members[broadcast.INBOX_GROUP]) == 2
    for socket in sockets[1:]:
        await socket.disconnect()
    assert broadcast.INBOX_GROUP not in hub.members
    assert hub.channel not in layer.groups.get(broadcast.INBOX_GROUP, {})


# -- what a socket takes from its client: budget, bounded replay, close codes ---------------


async def close_code(socket: WebsocketCommunicator, seconds: float = 3) -> tuple[int, int]:
    """(close code, text frames received before it)."""
    sent = 0
    while (message := await socket.receive_output(timeout=seconds))["type"] == \
            "websocket.send":
        sent += 1
    assert message["type"] == "websocket.close"
    return message.get("code"), sent


async def test_asking_again_on_the_same_socket_replays_nothing_twice(
        connect: Connect, cookies: dict[str, str], users: dict[str, User]) -> None:
    await started(users)
    socket, _, _ = await connect(cookies["reviewer"])
    first = await caught_up(socket, 0)
    assert ROW.search(first)
    again = await caught_up(socket, 0)
    assert not ROW.search(again) and CURSOR.search(again)


async def test_a_flood_of_frames_closes_the_socket_after_its_budget(
        connect: Connect, cookies: dict[str, str], users: dict[str, User],
        caplog: pytest.LogCaptureFixture) -> None:
    await started(users)
    socket, _, _ = await connect(cookies["reviewer"])
    for _ in range(40):
        await socket.send_json_to({"after": 0})
    code, sent = await close_code(socket)
    assert code == frames.POLICY_VIOLATION
    assert sent <= frames.FrameBudget().burst  # at most one reply per allowed frame
    assert "faster than allowed" in caplog.text


async def test_a_client_too_far_behind_is_told_to_reload(
        connect: Connect, cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(3):
        await started(users)
    monkeypatch.setattr(feed, "CATCH_UP_LIMIT", 4)
    socket, _, _ = await connect(cookies["reviewer"])
    await socket.send_json_to({"after": 0})
    code, sent = await close_code(socket)
    assert (code, sent) == (frames.RELOAD, 0)


@pytest.mark.parametrize(("frame_kind", "code"), [
    ("binary", frames.UNSUPPORTED_DATA), ("not json", frames.INVALID_PAYLOAD),
])
async def test_frames_that_are_not_json_text_close_with_a_code_and_a_log_line(
        connect: Connect, cookies: dict[str, str], caplog: pytest.LogCaptureFixture,
        frame_kind: str, code: int) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    with caplog.at_level(logging.INFO, logger="forgeui"):
        if frame_kind == "binary":
            await socket.send_to(bytes_data=b"\x00\x01")
        else:
            await socket.send_to(text_data='{"after": 1')
        assert (await close_code(socket))[0] == code
    assert "inbox socket of user" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_json_nested_too_deep_closes_with_a_code_not_a_traceback(
        connect: Connect, cookies: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    socket, _, _ = await connect(cookies["reviewer"])
    with caplog.at_level(logging.INFO, logger="forgeui"):
        await socket.send_to(text_data="[" * 100_000)
        assert (await close_code(socket))[0] == frames.INVALID_PAYLOAD
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_refusal_codes_are_ones_daphne_can_send() -> None:
    """autobahn sends 1000 or 3000-4999 only; anything else crashes the socket (1011)."""
    for code in (frames.UNSUPPORTED_DATA, frames.INVALID_PAYLOAD, frames.POLICY_VIOLATION,
                 frames.RELOAD, frames.TOO_MANY_SOCKETS):
        assert 4000 <= code <= 4999


def joined(layer: Any) -> set[tuple[str, str]]:
    """Every (group, channel) membership of the in-memory layer."""
    return {(group, channel) for group, members in layer.groups.items() for channel in members}


async def test_a_refused_socket_leaves_its_groups_before_it_closes(
        connect: Connect, cookies: dict[str, str]) -> None:
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    before = joined(layer)  # the in-memory layer is the process's: other tests' members
    socket, _, _ = await connect(cookies["reviewer"])
    assert joined(layer) > before and layer.groups.get(broadcast.INBOX_GROUP)
    await socket.send_to(bytes_data=b"\x00")
    await close_code(socket)
    # No disconnect has reached the consumer yet: the refusal itself left the groups.
    assert joined(layer) == before


async def test_a_user_holds_at_most_a_few_sockets_at_once(
        connect: Connect, cookies: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames.sockets, "per_user", 3)
    opened = [await connect(cookies["reviewer"]) for _ in range(3)]
    assert all(connected for _, connected, _ in opened)
    _, connected, code = await connect(cookies["reviewer"])
    assert (connected, code) == (False, frames.TOO_MANY_SOCKETS)
    _, other, _ = await connect(cookies["supervisor"])  # the cap is per user
    assert other
    await opened[0][0].disconnect()
    _, connected, _ = await connect(cookies["reviewer"])
    assert connected  # a closed socket gives its place back


async def test_a_socket_whose_handler_fails_still_leaves_its_groups(
        cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from channels.layers import get_channel_layer

    from forgeui.inbox import consumers

    def broken(*args: Any) -> None:
        raise RuntimeError("injected: the catch-up fails")

    monkeypatch.setattr(consumers, "catch_up", broken)
    before = joined(get_channel_layer())
    socket = WebsocketCommunicator(application, "/ws/inbox/",
                                   headers=headers(cookies["reviewer"]))
    assert (await socket.connect(timeout=5))[0]
    assert joined(get_channel_layer()) > before
    await socket.send_json_to({"after": 0})
    with pytest.raises(RuntimeError, match="injected"):
        await socket.wait(timeout=5)  # raises the application's error as soon as it ends
    assert joined(get_channel_layer()) == before
    assert users["reviewer"].pk not in frames.sockets.open


@pytest.mark.parametrize("fails", ["group_add", "receive"])
async def test_a_socket_the_channel_layer_fails_gives_its_place_back(
        fails: str, cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A layer that cannot be reached (Redis down or restarted) ends the socket, while it
    connects or while it listens; either way the user's socket quota gets its place back,
    or an outage of a few reconnects would lock the user out until the server restarts."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    down = asyncio.Event()

    async def broken(*args: Any, **kwargs: Any) -> Any:
        await down.wait()  # listening works until the test takes the layer down
        raise ConnectionError("injected: the channel layer is down")

    monkeypatch.setattr(layer, fails, broken)
    socket = WebsocketCommunicator(application, "/ws/inbox/",
                                   headers=headers(cookies["reviewer"]))
    if fails == "group_add":
        down.set()
        with pytest.raises(ConnectionError, match="injected"):
            await socket.connect(timeout=5)
    else:
        assert (await socket.connect(timeout=5))[0]
        assert users["reviewer"].pk in frames.sockets.open
        down.set()
        with pytest.raises(ConnectionError, match="injected"):
            await socket.wait(timeout=5)
    assert users["reviewer"].pk not in frames.sockets.open


async def test_a_socket_whose_inbox_groups_the_layer_refuses_closes_with_a_code(
        cookies: dict[str, str], users: dict[str, User],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The inbox groups are joined once the socket is accepted; a layer that refuses them
    then closes it with an application code (daphne sends no other) and frees its place."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    group_add = layer.group_add

    async def inbox_refused(group: str, channel: str) -> None:
        if group == broadcast.INBOX_GROUP or group.startswith(broadcast.TEAM_GROUP_PREFIX):
            raise ConnectionError("injected: the layer refuses the inbox group")
        await group_add(group, channel)

    monkeypatch.setattr(layer, "group_add", inbox_refused)
    socket = WebsocketCommunicator(application, "/ws/inbox/",
                                   headers=headers(cookies["reviewer"]))
    assert (await socket.connect(timeout=5))[0]  # accepted first
    assert (await close_code(socket))[0] == frames.SERVER_ERROR
    assert users["reviewer"].pk not in frames.sockets.open
    await socket.disconnect()
