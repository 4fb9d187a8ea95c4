"""How an interrupt's assignees are stored: ``"\\nuser:alice\\ngroup:finance\\n"`` tokens.

The token form makes "assigned to me" a ``contains`` filter on SQLite and PostgreSQL
alike. The rules on who may answer live with the team (``forgeui.team.assignment``);
this module only reads and writes the stored form, so the models and the store need no
higher layer.
"""

from __future__ import annotations

from typing import Any, Protocol


class NamedViewer(Protocol):
    """What the queryset filters read of a viewer (``forgeui.team.assignment.Viewer``)."""

    @property
    def user_id(self) -> int | None: ...

    @property
    def can_answer(self) -> bool: ...

    @property
    def unrestricted(self) -> bool: ...

    def tokens(self) -> list[str]: ...


def token(kind: str, name: str) -> str:
    return f"\n{kind}:{name}\n"


def encode(users: list[str], groups: list[str]) -> str:
    """The stored form; "" when nobody is named (anyone with the role may answer)."""
    names = [f"user:{u}" for u in _names(users)] + [f"group:{g}" for g in _names(groups)]
    return "\n" + "\n".join(names) + "\n" if names else ""


def decode(stored: str) -> tuple[list[str], list[str]]:
    """(users, groups) from the stored form."""
    lines = [line for line in (stored or "").split("\n") if line]
    return ([line[5:] for line in lines if line.startswith("user:")],
            [line[6:] for line in lines if line.startswith("group:")])


def from_record(named: Any) -> str:
    """The stored form of an interrupt record's ``assignees`` (``ctx.interrupt``'s keyword
    argument, never a payload key); anything malformed names nobody."""
    if not isinstance(named, dict):
        return ""
    return encode(_list(named.get("users")), _list(named.get("groups")))


def _list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _names(values: list[str]) -> list[str]:
    """Unique, order kept; a newline would break the token format."""
    clean = (v.strip().replace("\n", " ") for v in values)
    return list(dict.fromkeys(v for v in clean if v))
