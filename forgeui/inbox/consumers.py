"""The inbox websocket: pushes rendered rows as htmx out-of-band fragments.

``/ws/inbox/?graph=&sub_agent=&namespace=&sort=`` follows the inbox with those filters;
``/ws/inbox/?tree=<root_thread_id>`` only says "this run tree changed" (a run page, a
timeline); ``/ws/inbox/?interrupt=<id>`` only says "this interrupt changed" (its page).
Such a page then reloads its live parts itself, so what it shows is rendered for its
reader by the page's own view.

Protocol: the server sends HTML (htmx's ws extension swaps it); the client sends one JSON
message, ``{"after": <last event id>}``, on every (re)connect, and the server replays what
changed after that id, read from the ``Event`` table, so a dropped connection loses
nothing. A client more than a page of events behind is closed with ``frames.RELOAD`` (its
page reloads); one that floods, or sends what is not JSON text, is closed too, with an
application close code (``frames``), after leaving its groups. A user's sockets in one
process are capped (``frames.SocketQuota``). Rows are rendered from the interrupt's
current state, never from the event, so replays and out-of-order delivery end in the
same page.

With teams, a socket joins (through its event loop's ``hub``) the groups of the teams its
user may read and is sent nothing about any other team's objects (``audience``); one
whose user stops reading a team reloads its page.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth import get_user_model

from forgeui.inbox import access, broadcast, frames
from forgeui.inbox.audience import Audience
from forgeui.inbox.feed import Snapshot, catch_up, feed, snapshots
from forgeui.inbox.hub import hub_of
from forgeui.inbox.rows import (
    MASKED,
    InboxFilters,
    RowFacts,
    masked_copy,
    oob_cursor,
    oob_delete,
    oob_replace,
    oob_upsert,
    row_mode,
)
from forgeui.permissions.roles import Action, allowed
from forgeui.team.assignment import Viewer, mode

ROWS_PER_FRAME = 200  # rows per websocket message while catching up
logger = logging.getLogger(__name__)


@database_sync_to_async
def fresh_user(user_id: Any) -> Any:
    """The user as stored now (the scope's user caches its roles)."""
    return get_user_model().objects.get(pk=user_id)


@database_sync_to_async
def may_read(user: Any) -> tuple[bool, Viewer, Audience]:
    """(may watch the inbox, who is watching: groups and role, the teams they read and
    answer in), read fresh."""
    return allowed(user, Action.READ), Viewer.of(user), Audience.of(user)


class InboxConsumer(AsyncJsonWebsocketConsumer):
    """One browser tab's inbox (or run page): filters, role and its catch-up cursor."""

    async def connect(self) -> None:
        broadcast.serve_from(asyncio.get_running_loop())
        user = self.scope.get("user")
        session_key = getattr(self.scope.get("session"), "session_key", None)
        if user is None or not user.is_authenticated or not session_key:
            await self.close(code=access.SESSION_GONE)
            return
        may_watch, self.viewer, self.audience = await may_read(user)
        if not may_watch:
            await self.close(code=access.ROLE_LOST)
            return
        if not frames.sockets.take(user.pk):
            logger.info("inbox socket of user %s refused: %s open already", user.pk,
                        frames.sockets.per_user)
            await self.close(code=frames.TOO_MANY_SOCKETS)
            return
        self.quota_user = user.pk  # given back once, by release()
        query = parse_qs(self.scope.get("query_string", b"").decode("latin1"))
        self.tree = (query.get("tree") or [""])[-1]
        self.interrupt = (query.get("interrupt") or [""])[-1]
        self.filters = InboxFilters.from_query(query)
        self.access_key = (user.pk, session_key)
        self.cursor = 0
        self.budget = frames.FrameBudget()
        self.replayed: int | None = None  # where this socket's catch-up ended
        self.refused = False
        self.groups = [access.user_group(user.pk), access.session_group(session_key)]
        for group in self.groups:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        if await self.join_hub():
            access.watcher().add(self)
            feed().add(self)

    async def join_hub(self) -> bool:
        """Join the inbox groups through this loop's hub, once the socket can be sent to
        (the catch-up replays what was announced before); websocket_disconnect leaves the
        others. False, and the socket closed, where the layer refuses."""
        self.hub = hub_of(self.channel_layer)
        try:
            await self.hub.join(self, self.audience.groups())
        except Exception:  # the layer is away (Redis restarting): the page comes back later
            logger.warning("inbox socket could not join its groups", exc_info=True)
            await self.revoke(frames.SERVER_ERROR)
            return False
        return True

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # However the socket ends: a channel layer that fails while it listens (Redis
        # restarted) ends it with no disconnect, and its quota place must come back.
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()

    async def disconnect(self, code: int) -> None:
        await self.leave_hub()
        self.release()

    def release(self) -> None:
        """Stop watching and give the socket back to the user's quota, once."""
        if hasattr(self, "hub"):
            self.hub.forget_soon(self.hub.leave(self))
        if hasattr(self, "access_key"):
            access.watcher().discard(self)
            feed().discard(self)
        if getattr(self, "quota_user", None) is not None:
            frames.sockets.give_back(self.quota_user)
            self.quota_user = None

    async def leave_groups(self) -> None:
        """Leave every group now: a socket that never sees its disconnect would stay a
        member in the layer (every broadcast then also goes to it) until the group expires."""
        await self.leave_hub()
        groups, self.groups = getattr(self, "groups", []), []
        for group in groups:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def leave_hub(self) -> None:
        """Leave the inbox groups, and the layer's where this was the loop's last member."""
        if hasattr(self, "hub"):
            await self.hub.forget(self.hub.leave(self))

    async def receive(self, text_data: str | None = None,
                      bytes_data: bytes | None = None) -> None:
        """Refuse floods and frames that are not JSON text with a close code and a log
        line (Channels would close with 1011 and a traceback)."""
        if self.refused:
            return  # frames already on their way when the socket was closed
        if not self.budget.take():
            await self.refuse(frames.POLICY_VIOLATION, "sent frames faster than allowed")
        elif text_data is None:
            await self.refuse(frames.UNSUPPORTED_DATA, "sent a binary frame")
        else:
            try:
                content = json.loads(text_data)
            except (ValueError, RecursionError):  # RecursionError: nested too deep
                await self.refuse(frames.INVALID_PAYLOAD, "sent a frame that is not JSON")
                return
            await self.receive_json(content)

    async def refuse(self, code: int, why: str) -> None:
        logger.info("inbox socket of user %s closed (%s): it %s", self.access_key[0], code,
                    why)
        await self.revoke(code)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """``{"after": N}``: replay what changed after event N, once per socket.

        Channels hands a consumer one frame at a time, so one catch-up runs per socket.
        A later request on the same socket starts no earlier than where the first one
        ended (live events have kept the socket current since), so asking again costs
        one indexed read, however many times a client asks from 0.
        """
        after = content.get("after") if isinstance(content, dict) else None
        if not (isinstance(after, int) and not isinstance(after, bool) and after >= 0):
            return
        start = after if self.replayed is None else max(after, self.replayed)
        result = await database_sync_to_async(catch_up)(start, self.viewer, self.audience)
        if result is None:
            await self.refuse(frames.RELOAD, f"asked to catch up from {after}, too far behind")
            return
        found, last = result
        self.replayed = last
        feed().caught_up(self, last)
        await self.push(found, last)

    async def dispatch(self, message: dict[str, Any]) -> None:
        try:
            await super().dispatch(message)
        except StopConsumer:
            raise
        except Exception:
            # The socket dies with 1011 and may never see its disconnect: leave now.
            await self.leave_groups()
            self.release()
            raise

    async def inbox_event(self, message: dict[str, Any]) -> None:
        """``broadcast`` announced a committed change (handed on by the loop's ``hub``), or
        ``EventFeed`` found one. Reads through ``database_sync_to_async``, which closes
        stale connections itself."""
        ids = [int(event_id) for event_id in message["event_ids"]]
        feed().hear(self, ids)
        found = [await snapshots.get(event_id) for event_id in ids]
        await self.push(found, max(ids), quiet_if_empty=True)

    async def access_recheck(self, message: dict[str, Any]) -> None:
        """The user's groups or account changed: still allowed? Still may answer?"""
        code = await database_sync_to_async(access.access_code)(*self.access_key)
        if code is not None:
            await self.revoke(code)
            return
        _, self.viewer, audience = await may_read(await fresh_user(self.access_key[0]))
        await self.regroup(audience)

    async def regroup(self, audience: Audience) -> None:
        """Follow a change of the teams the user reads: join the groups of the teams
        now read, leave the others. A team no longer read may still have rows on the
        page, so the page reloads (``frames.RELOAD``) and shows what it may now."""
        before, self.audience = self.audience, audience
        if audience == before or self.refused:
            return
        if audience.reads_less_than(before):
            await self.refuse(frames.RELOAD, "reads fewer teams than before")
            return
        old, new = set(before.groups()), set(audience.groups())
        await self.hub.forget(self.hub.leave(self, sorted(old - new)))
        await self.hub.join(self, sorted(new - old))

    async def access_revoked(self, message: dict[str, Any]) -> None:
        await self.revoke(access.SESSION_GONE)

    async def revoke(self, code: int) -> None:
        self.refused = True
        await self.leave_groups()
        self.release()
        await self.close(code=code)

    async def push(self, found: list[Snapshot], last: int, quiet_if_empty: bool = False,
                   ) -> None:
        """Send the fragments for ``found``, in frames of at most ``ROWS_PER_FRAME`` rows.

        ``quiet_if_empty`` (live events): nothing for this page, nothing sent; the cursor
        goes out with the next frame (a reconnect in between replays a few events that
        show nothing). Half of a busy inbox's frames were such cursor-only frames.
        """
        signal = self.signal_id()
        parts = self.signal_parts(found) if signal else self.row_parts(found)
        self.cursor = max(self.cursor, last)
        if not parts and (signal or quiet_if_empty):
            return  # a run page hears only about its own tree; see quiet_if_empty
        cursor = oob_cursor(self.cursor, signal or "inbox-cursor")
        for start in range(0, max(len(parts), 1), ROWS_PER_FRAME):
            await self.send(text_data="".join(parts[start:start + ROWS_PER_FRAME]) + cursor)

    def row_parts(self, found: list[Snapshot]) -> list[str]:
        parts = []
        for item in found:
            if not self.audience.may_read(item.team):
                continue  # another team's: not even its deletion
            shown = item.interrupt or item.ended
            if shown is not None and self.shows(shown):
                parts.append(oob_upsert(self.row_of(shown, item.rows, item.facts),
                                        item.interrupt_id, self.filters.insert_swap))
            elif item.interrupt_id:  # answered, claimed away, gone: the row leaves
                parts.append(oob_delete(item.interrupt_id))
            parts.extend(oob_replace(self.row_of(interrupt, rows, item.facts))
                         for interrupt, rows in item.refreshed
                         if self.audience.may_read(interrupt.team) and self.shows(interrupt))
        return parts

    def shows(self, interrupt: Any) -> bool:
        """Whether this page's filters take the row, judged on what the viewer may see
        (a search must not find a row by a value it shows masked) and may do (the queue
        holds only rows they may answer, in their team)."""
        if not self.audience.sees_whole(interrupt.team):
            if self.filters.tab == "queue":
                return False
            interrupt = masked_copy(interrupt)
        return self.filters.matches(interrupt, self.viewer)

    def row_of(self, interrupt: Any, rows: dict[str, str], facts: RowFacts | None) -> str:
        """The row as this viewer sees it (an ended row is read-only for everyone); who
        may not answer in its team sees it read-only, sensitive keys masked."""
        if not self.audience.sees_whole(interrupt.team):
            return rows.get(MASKED) or rows["read"]
        shown = mode(self.viewer, interrupt) if facts is None else row_mode(
            self.viewer, interrupt, facts)
        return rows.get(shown) or rows["read"]

    def signal_id(self) -> str:
        """The element a watching page's signal replaces; "" for an inbox socket."""
        if self.interrupt:
            return "interrupt-changed"
        return "tree-changed" if self.tree else ""

    def signal_parts(self, found: list[Snapshot]) -> list[str]:
        # The cursor element is the signal itself: its swap makes the page reload its live
        # parts.
        found = [item for item in found if self.audience.may_read(item.team)]
        if self.interrupt:
            heard = any(item.interrupt_id == self.interrupt for item in found)
        else:
            heard = any(item.root_thread_id == self.tree for item in found)
        return [""] if heard else []
