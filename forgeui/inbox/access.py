"""Who may keep an inbox websocket open, and closing sockets when that changes.

A socket is tied to its user and its session. Three things close it:

- logging out (``user_logged_out``): an ``access.revoked`` message to the session's group;
- a change to the user's groups, activity or the user row itself: an ``access.recheck``
  message to the user's group, and each of their sockets checks again;
- a once-a-second re-check of every open socket (``AccessWatcher``), which catches what
  no signal announces: an expired or deleted session, a change made by another process
  on a channel layer that does not reach this one.

A socket whose user still reads but in other teams follows them (``consumers.regroup``).

Close codes: 4401 (the session is gone) and 4403 (the role no longer allows reading).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from functools import partial
from importlib import import_module
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.signals import user_logged_out
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
from django.dispatch import receiver
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from forgeui.inbox.audience import Audience
from forgeui.inbox.broadcast import group_send
from forgeui.inbox.periodic import SocketLoopWork, of_loop
from forgeui.permissions.roles import Action, allowed

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

SESSION_GONE = 4401
ROLE_LOST = 4403
RECHECK_SECONDS = 1.0

User = get_user_model()


def user_group(user_id: Any) -> str:
    return f"forge.user.{user_id}"


def session_group(session_key: str) -> str:
    """Hashed: a group name may travel through Redis, a session key must not."""
    return "forge.session." + hashlib.sha256(session_key.encode()).hexdigest()[:40]


def access_code(user_id: Any, session_key: str) -> int | None:
    """None while the socket may stay open; else the code to close it with."""
    return access_codes({(user_id, session_key)}).get((user_id, session_key))


def access_codes(sockets: set[tuple[Any, str]]) -> dict[tuple[Any, str], int]:
    """The close codes of those of ``sockets`` that must close, in a few queries."""
    return access_state(sockets)[0]


def access_state(sockets: set[tuple[Any, str]],
                 ) -> tuple[dict[tuple[Any, str], int], dict[str, Audience]]:
    """(the close codes of those of ``sockets`` that must close, each active user's
    ``Audience`` by id), in a few queries."""
    users = {str(user.pk): user for user in User.objects.filter(
        pk__in={user_id for user_id, _ in sockets}, is_active=True).prefetch_related("groups")}
    for user in users.values():  # the roles read the groups from here, not again
        user._forge_groups = frozenset(group.name for group in user.groups.all())
    sessions = load_sessions({key for _, key in sockets})
    codes = {}
    for user_id, key in sockets:
        code = judge(users.get(str(user_id)), sessions.get(key, {}), user_id)
        if code is not None:
            codes[(user_id, key)] = code
    return codes, {user_id: Audience.of(user) for user_id, user in users.items()}


def judge(user: Any, session: dict[str, Any], user_id: Any) -> int | None:
    if user is None or str(session.get(SESSION_KEY)) != str(user_id):
        return SESSION_GONE
    if not constant_time_compare(session.get(HASH_SESSION_KEY, ""),
                                 user.get_session_auth_hash()):
        return SESSION_GONE  # the password changed: Django logs such sessions out too
    return None if allowed(user, Action.READ) else ROLE_LOST


def load_sessions(keys: set[str]) -> dict[str, dict[str, Any]]:
    """Live sessions' data by key: one query with the database engine."""
    engine = import_module(settings.SESSION_ENGINE)
    if settings.SESSION_ENGINE != "django.contrib.sessions.backends.db":
        return {key: engine.SessionStore(key).load() for key in keys}
    decoder = engine.SessionStore()
    rows = Session.objects.filter(session_key__in=keys, expire_date__gt=timezone.now())
    return {row.session_key: decoder.decode(row.session_data) for row in rows}


class AccessWatcher(SocketLoopWork):
    """Re-checks every open socket of one event loop, every ``RECHECK_SECONDS``."""

    interval = RECHECK_SECONDS

    async def tick(self) -> None:
        consumers = list(self.sockets)
        # Off the thread the consumers' own queries share, so rows never wait.
        closing, audiences = await database_sync_to_async(
            access_state, thread_sensitive=False)({c.access_key for c in consumers})
        for consumer in consumers:
            if consumer.access_key in closing:
                await consumer.revoke(closing[consumer.access_key])
            elif audiences.get(str(consumer.access_key[0])) not in (None, consumer.audience):
                # Read again by the socket itself: this read may be older than one a
                # signal made it apply meanwhile.
                await consumer.access_recheck({})


def watcher() -> AccessWatcher:
    """The watcher of the running event loop (daphne has one; each test has its own)."""
    return of_loop(AccessWatcher)


# -- signals: tell the sockets at once ----------------------------------------------------

def notify(group: str, kind: str) -> None:
    """Send ``{"type": kind}`` to ``group`` once the current transaction commits."""
    transaction.on_commit(partial(_send, group, {"type": kind}))


def _send(group: str, message: dict[str, Any]) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # plain sync code: the usual case (views, admin, commands)
        group_send(group, message)
        return
    layer = get_channel_layer()  # sync code called from inside an event loop
    if layer is not None:
        task = asyncio.ensure_future(layer.group_send(group, message))
        _background.add(task)
        task.add_done_callback(_background.discard)


_background: set[asyncio.Future[None]] = set()


@receiver(user_logged_out)
def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        notify(session_group(session_key), "access.revoked")
    if user is not None:
        notify(user_group(user.pk), "access.recheck")


@receiver(m2m_changed, sender=User.groups.through)
def _groups_changed(sender: Any, instance: Any, action: str, reverse: bool,
                    pk_set: set[Any] | None, **kwargs: Any) -> None:
    if action == "pre_clear" and reverse:  # group.user_set.clear(): who is about to lose it
        instance._forge_cleared = list(instance.user_set.values_list("pk", flat=True))
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if not reverse:
        user_ids = [instance.pk]
    else:
        user_ids = list(pk_set or getattr(instance, "_forge_cleared", []))
    for user_id in user_ids:
        notify(user_group(user_id), "access.recheck")


@receiver(pre_delete, sender=Group)
def _group_deleted(sender: Any, instance: Group, **kwargs: Any) -> None:
    for user_id in instance.user_set.values_list("pk", flat=True):
        notify(user_group(user_id), "access.recheck")


@receiver(post_save, sender=User)
@receiver(post_delete, sender=User)
def _user_changed(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    if update_fields and set(update_fields) == {"last_login"}:
        return  # every login saves last_login; nothing about access changed
    notify(user_group(instance.pk), "access.recheck")
