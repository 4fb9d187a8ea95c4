"""Refused inbox sockets under a live daphne on the real Redis channel layer.

Daphne (autobahn) sends only close codes 1000 and 3000-4999; any other code raises in the
application, which then ends in 1011 with a traceback and never leaves its channel-layer
groups, so they stay in Redis until the group expiry. Here every refusal must close with an
application code, log no traceback and leave every group. The layer uses a prefix of its
own on the shared Redis, and only its keys are removed afterwards.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import websockets

from tests.e2e.conftest import LiveServer, Seed, serve
from tests.forgeui.cluster import SESSION
from tests.processes import manage, wait_until

pytestmark = [pytest.mark.redis, pytest.mark.timeout(600)]

REDIS_URL = "redis://127.0.0.1:6379/0"
SOCKETS = 300
# Sockets open at once: below the per-user cap, and few enough that a loaded machine's
# client answers daphne's close within its one-second close handshake (else the reset
# can drop the close frame, and the client sees 1006).
AT_ONCE = 5
ABNORMAL_CLOSURE = 1006  # no close frame reached the client
REFUSED_FRAMES: dict[str, list[str | bytes]] = {
    "binary": [b"\x00\x01"],
    "not json": ['{"after": 1'],
    "nested too deep": ["[" * 100_000],
    "quoted brackets": ['["' * 100_000],
    "flood": [json.dumps({"after": 0})] * 40,
}


class Refusals:
    def __init__(self, live: LiveServer, cookie: str, prefix: str, log: Path) -> None:
        self.live, self.cookie, self.prefix, self.log = live, cookie, prefix, log
        self.redis = redis.Redis.from_url(REDIS_URL)

    def groups(self) -> dict[str, int]:
        """Each channel-layer group of this forge in Redis, and its member count."""
        return {key.decode(): int(self.redis.zcard(key))
                for key in self.redis.scan_iter(f"{self.prefix}:group:*")}

    async def refused(self, frames: list[str | bytes]) -> int | None:
        """The code a socket sent ``frames`` was closed with; None if it stayed open.

        A 1006 is tried once more with a new socket: daphne resets a connection whose
        close the client did not answer within a second, and a client slowed by a loaded
        machine can lose the close frame in that reset. A server that really closes
        abnormally does so on the second socket too."""
        for _ in range(2):
            try:
                code = await asyncio.wait_for(self.closed_after(frames), 30)
            except TimeoutError:
                return None
            if code != ABNORMAL_CLOSURE:
                return code
        return code

    async def closed_after(self, frames: list[str | bytes]) -> int | None:
        url = self.live.url.replace("http://", "ws://") + "/ws/inbox/"
        async with websockets.connect(url, origin=self.live.url,  # type: ignore[arg-type]
                                      additional_headers={"Cookie":
                                                          f"sessionid={self.cookie}"},
                                      max_size=None, open_timeout=30,
                                      compression=None) as ws:
            try:
                for frame in frames:
                    await ws.send(frame)
                async for _ in ws:
                    pass
            except websockets.ConnectionClosed:
                pass
            await ws.wait_closed()
            return ws.close_code


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[Refusals]:
    prefix = f"forge-test-{uuid.uuid4().hex[:12]}"
    folder = tmp_path_factory.mktemp("refused")
    with serve(folder, seeded, REDIS_URL=REDIS_URL, CHANNEL_LAYER_PREFIX=prefix,
               LOG_LEVEL="INFO") as live:
        cookie = manage("shell", "-c", SESSION, env=live.env).stdout.split()[-1]
        found = Refusals(live, cookie, prefix, folder / "daphne.log")
        try:
            yield found
        finally:
            keys = list(found.redis.scan_iter(f"{prefix}*"))
            if keys:
                found.redis.delete(*keys)
            found.redis.close()


async def refuse_all(refusals: Refusals, kinds: list[str]) -> list[tuple[str, Any]]:
    codes: list[tuple[str, Any]] = []
    for start in range(0, len(kinds), AT_ONCE):
        batch = kinds[start:start + AT_ONCE]
        closed = await asyncio.gather(*(refusals.refused(REFUSED_FRAMES[kind])
                                        for kind in batch))
        codes.extend(zip(batch, closed, strict=True))
    return codes


def test_refused_sockets_close_with_application_codes_and_leave_their_groups(
        refusals: Refusals) -> None:
    kinds = [list(REFUSED_FRAMES)[i % len(REFUSED_FRAMES)] for i in range(SOCKETS)]
    codes = asyncio.run(refuse_all(refusals, kinds))
    wrong = {(kind, code) for kind, code in codes if not (4000 <= (code or 0) <= 4999)}
    assert not wrong, f"closed outside the application range: {sorted(wrong, key=str)}"
    # Each socket left the inbox, user and session groups: none has a member left.
    wait_until(lambda: not any(refusals.groups().values()), 30, "the groups to empty")
    log = refusals.log.read_text(errors="replace")
    assert "Traceback" not in log and "RecursionError" not in log
    assert log.count("inbox socket of user") >= SOCKETS
