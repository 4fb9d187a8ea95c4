"""Under ASGI a request goes to a thread only where Django's handler must: the
``request_started`` signal, the sync middleware chain, CSRF's view check, the sync view,
a template response's rendering and the response's close. Django's own middleware, run
async, would hand each of its ``process_request`` and ``process_response`` calls to a
thread as well."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from asgiref.sync import SyncToAsync, async_to_sync
from django.contrib.auth.models import Group, User
from django.test import AsyncClient

from forgeui.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def handed_to_threads(path: str, **headers: str) -> tuple[int, list[str]]:
    """The response's status, and each function a ``sync_to_async`` ran meanwhile."""
    handed: list[str] = []
    original = SyncToAsync.__call__

    async def recording(self: SyncToAsync, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    with mock.patch.object(SyncToAsync, "__call__", recording):
        response = async_to_sync(AsyncClient().get)(path, headers=headers)
    return response.status_code, handed


# The signal, the chain, CSRF's view check, the view, the close; a page also renders.
AT_MOST = 5


def test_an_api_request_goes_to_a_thread_only_where_the_handler_must() -> None:
    user = User.objects.create_user("sam")
    user.groups.add(Group.objects.get_or_create(name="supervisor")[0])
    token = ApiToken.objects.issue(user)[1]
    status, handed = handed_to_threads("/api/runs", Authorization=f"Bearer {token}")
    assert status == 200
    assert len(handed) <= AT_MOST, handed


def test_a_page_request_goes_to_a_thread_only_where_the_handler_must() -> None:
    status, handed = handed_to_threads("/accounts/login/")
    assert status == 200
    assert len(handed) <= AT_MOST + 1, handed
