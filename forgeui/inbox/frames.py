"""What an inbox socket accepts from its client: a small budget of frames, a few sockets.

A browser sends one frame per (re)connect; a client that sends many is flooding, and
each frame costs the server a database read, so a socket over its budget is closed. A
user's sockets in one process are capped too: each one reconnecting replays events.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Close codes in the application range (like access.SESSION_GONE): daphne refuses to send
# RFC 6455's 1003/1007/1008, and a refused close crashes the socket with 1011.
UNSUPPORTED_DATA = 4003  # a binary frame: the protocol is JSON text
INVALID_PAYLOAD = 4007  # text that is not JSON (or nested too deep to read)
POLICY_VIOLATION = 4008  # over the frame budget
RELOAD = 4409  # too far behind to catch up: forge.js reloads the page
TOO_MANY_SOCKETS = 4429  # the user has SocketQuota.per_user sockets open already
SERVER_ERROR = 4011  # the server failed handling the socket (RFC 6455's 1011)


@dataclass
class FrameBudget:
    """A token bucket: ``burst`` frames at once, then ``per_second`` more each second."""

    burst: float = 10.0
    per_second: float = 1.0
    tokens: float = field(init=False)
    stamp: float = field(init=False, default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def take(self) -> bool:
        """Spend one frame; False when the budget is gone."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class SocketQuota:
    """How many sockets each user holds open in this process, at most ``per_user``."""

    def __init__(self, per_user: int = 32) -> None:
        self.per_user = per_user
        self.open: Counter[Any] = Counter()

    def take(self, user_id: Any) -> bool:
        """One more socket for ``user_id``; False (nothing taken) at the cap."""
        if self.open[user_id] >= self.per_user:
            return False
        self.open[user_id] += 1
        return True

    def give_back(self, user_id: Any) -> None:
        self.open[user_id] -= 1
        if self.open[user_id] <= 0:
            del self.open[user_id]


sockets = SocketQuota()
