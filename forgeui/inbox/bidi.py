"""Bidirectional-override characters shown for what they are.

U+202E and its kin reorder the text around them when displayed, so a payload can make
"approve $10" read as something else in the inbox. Every page and pushed row replaces
them with a visible marker such as ``⟦U+202E⟧``; stored data keeps them as they came.
"""

from __future__ import annotations

import re

CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def mark(text: str) -> str:
    """``text`` with each bidirectional control shown as a visible marker, e.g. ``⟦U+202E⟧``."""
    return CONTROLS.sub(lambda m: f"⟦U+{ord(m.group()):04X}⟧", text)
