"""Sensitive payload fields: shown whole only to people who may answer.

A graph names them (``ctx.interrupt(..., sensitive=("iban",))``), an agent request per
action (``"sensitive": ["iban"]``). A key so named is masked wherever it appears in the
payload, at any depth, in every list, export, e-mail, webhook and page shown to anyone
else; the checkpoint keeps it whole, as the graph needs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from forgeui.permissions.roles import Action, allowed

MASK = "•••• (sensitive)"


def mask(value: Any, keys: Iterable[str]) -> Any:
    """``value`` with every dict entry named in ``keys`` replaced by ``MASK``."""
    names = frozenset(keys)
    return _masked(value, names) if names else value


def _masked(value: Any, names: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {key: MASK if key in names else _masked(item, names)
                for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item, names) for item in value]
    return value


def may_see(user: Any, interrupt: Any) -> bool:
    """Whole payloads are for who may answer ``interrupt`` (its team's reviewers)."""
    return allowed(user, Action.ANSWER, getattr(interrupt, "team", ""))


def payload_for(user: Any, interrupt: Any) -> Any:
    """``interrupt``'s payload as ``user`` may see it."""
    keys = getattr(interrupt, "sensitive", None) or ()
    if not keys or may_see(user, interrupt):
        return interrupt.payload
    return mask(interrupt.payload, keys)


def masked_payload(interrupt: Any) -> Any:
    """The payload for anyone at all (exports, e-mail, webhooks, Slack)."""
    return mask(interrupt.payload, getattr(interrupt, "sensitive", None) or ())
