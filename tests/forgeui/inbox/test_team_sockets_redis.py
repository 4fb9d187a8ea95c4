"""Teams on the inbox websocket over the real Redis channel layer: each team's group is
a Redis group, and a finance reviewer's socket never hears of support's interrupts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from channels.layers import get_channel_layer
from django.contrib.auth.models import User

from tests.forgeui.inbox.test_consumers import ANY_ROW, Connect, started
from tests.forgeui.inbox.test_team_sockets import (  # noqa: F401 - fixtures, by name
    everything,
    members,
    team_cookies,
    watching,
)

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(60)]

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def redis_layer(settings: Any) -> Iterator[None]:
    settings.CHANNEL_LAYERS = {"default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": f"forge-test-{uuid.uuid4().hex[:12]}"}}}
    yield


async def test_on_redis_a_team_socket_hears_only_its_teams_rows(
        redis_layer: None, connect: Connect, team_cookies: dict[str, str],  # noqa: F811
        members: dict[str, User]) -> None:  # noqa: F811
    layer = get_channel_layer()
    assert type(layer).__name__ == "RedisChannelLayer"
    # Its keys carry the test's own prefix and expire on their own.
    fin = await watching(connect, team_cookies["fin"])
    plain = await watching(connect, team_cookies["reviewer"])
    [support] = await started(members, "deploy")
    [finance] = await started(members, "transfer")
    heard = await everything(fin)
    assert finance.pk in ANY_ROW.findall(heard) and support.pk not in heard
    assert {finance.pk, support.pk} <= set(ANY_ROW.findall(await everything(plain, 0.5)))
