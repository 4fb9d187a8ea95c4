"""What an inbox socket accepts from its client: a small budget of frames.

A browser sends one frame per (re)connect; a client that sends many is flooding, and
each frame costs the server a database read, so a socket over its budget is closed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# Close codes (RFC 6455 and the application range, like access.SESSION_GONE).
UNSUPPORTED_DATA = 1003  # a binary frame: the protocol is JSON text
INVALID_PAYLOAD = 1007  # text that is not JSON
POLICY_VIOLATION = 1008  # over the frame budget
RELOAD = 4409  # too far behind to catch up: forge.js reloads the page


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
