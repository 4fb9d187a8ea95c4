"""An announcement made by a process with no server (an rq work horse, a command) reaches
the inbox group even when the process ends right after its job, as a work horse does
with ``os._exit``; on the real Redis channel layer."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from typing import Any

import pytest
from channels_redis.core import RedisChannelLayer

from forgeui.inbox.broadcast import INBOX_GROUP, INBOX_MESSAGE_TYPE
from tests.forgeui.conftest import ROOT

pytestmark = pytest.mark.redis

REDIS_URL = "redis://127.0.0.1:6379/0"
# The job's end as rq's work horse ends: os._exit, no atexit, no daemon thread joined.
ANNOUNCE_AND_EXIT = """
import os, django
django.setup()
from forgeui.inbox.broadcast import broadcast
broadcast([41, 42])
os._exit(0)
"""


async def heard_after(announce: Any, prefix: str) -> dict[str, Any]:
    layer = RedisChannelLayer(hosts=[REDIS_URL], prefix=prefix)
    channel = await layer.new_channel()
    await layer.group_add(INBOX_GROUP, channel)
    try:
        await asyncio.to_thread(announce)
        return await asyncio.wait_for(layer.receive(channel), 30)
    finally:
        await layer.group_discard(INBOX_GROUP, channel)
        await layer.flush()


def test_a_process_that_exits_after_announcing_still_reaches_the_inbox() -> None:
    prefix = f"forge-test-{uuid.uuid4().hex[:12]}"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "REDIS_URL": REDIS_URL,
           "CHANNEL_LAYER_PREFIX": prefix, "DJANGO_SETTINGS_MODULE": "forgeui.settings"}

    def announce() -> None:
        done = subprocess.run([sys.executable, "-c", ANNOUNCE_AND_EXIT], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    message = asyncio.run(heard_after(announce, prefix))
    assert message == {"type": INBOX_MESSAGE_TYPE, "group": INBOX_GROUP, "event_ids": [41, 42]}
