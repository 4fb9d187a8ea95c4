"""What every route of the API shares: field types, request bodies, pages and errors.

Request bodies forbid unknown fields and are strict about types (``"1"`` is not an
integer), so a typo is a 422 naming the field instead of a silently ignored option.
Query and path strings refuse NUL characters (PostgreSQL cannot store or compare them);
date filters take a date (midnight UTC) or an RFC 3339 date-time with its zone. The
shapes of each feature live beside its routes (``forgeui.api.runs``, ``.interrupts``, ...).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination
from pydantic import AfterValidator, BeforeValidator, ConfigDict, StringConstraints

from forgeui.runs.exceptions import NotFound

# -- building blocks ---------------------------------------------------------------------


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not accepted")
    return value


DATE = r"\d{4}-\d{2}-\d{2}"
DATE_OR_DATETIME = re.compile(
    rf"{DATE}|{DATE}[Tt ]\d{{2}}:\d{{2}}:\d{{2}}(\.\d{{1,6}})?([Zz]|[+-]\d{{2}}:\d{{2}})")


def _rfc3339(value: Any) -> Any:
    """A date, or a date-time with its zone: nothing pydantic would read as a timestamp."""
    if isinstance(value, str) and not DATE_OR_DATETIME.fullmatch(value):
        raise ValueError("use a date (2025-01-31) or a date-time with a zone "
                         "(2025-01-31T09:00:00Z)")
    return value


def _instant(value: datetime | date) -> datetime:
    """A date is its midnight UTC; an offset that leaves years 1..9999 is refused."""
    if not isinstance(value, datetime):
        value = datetime.combine(value, time(), tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("date-time out of range") from None


Id = Annotated[str, StringConstraints(min_length=1, max_length=255), AfterValidator(_no_nul)]
Text = Annotated[str, StringConstraints(max_length=255), AfterValidator(_no_nul)]
When = Annotated[datetime | date, BeforeValidator(_rfc3339), AfterValidator(_instant)]
# A thread id a caller chooses: no "/" (that marks a sub-agent's thread).
NewThreadId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$")]
NoteText = Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
RunStatus = Literal["running", "interrupted", "completed", "cancelled", "failed"]
InterruptStatus = Literal["pending", "answered", "cancelled"]
ChildPolicy = Literal["leave", "cancel"]


class Body(Schema):
    """Base of every request body: strict types, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Page(LimitOffsetPagination):
    """``limit`` (1-200, default 50) and ``offset``; lists answer ``{items, count}``."""

    class Input(Schema):
        limit: int = Field(50, ge=1, le=200)
        offset: int = Field(0, ge=0, le=1_000_000_000)


# -- errors ------------------------------------------------------------------------------


class ErrorOut(Schema):
    detail: str


class FieldError(Schema):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorOut(Schema):
    detail: list[FieldError]


class LatestOut(Schema):
    """Where a run stands now, for a client whose request came too late."""

    run_id: str | None = None
    thread_id: str | None = None
    root_thread_id: str | None = None
    checkpoint_id: str | None = None
    status: str | None = None
    interrupts: list[str] = Field(default_factory=list, description="pending interrupt ids")


class ConflictOut(Schema):
    """409: the target is no longer pending (or not only one is pending)."""

    detail: str
    interrupt_id: str | None = None
    status: str | None = Field(None, description="the interrupt's status now")
    answered_by: str | None = Field(None, description="username of whoever answered first")
    answered_at: datetime | None = None
    claimed_by: str | None = Field(None, description="who holds the claim, when that is why")
    graph: str | None = Field(None, description="the graph that cannot be loaded, when that "
                                                "is why")
    latest: LatestOut


ERRORS: dict[int, type[Schema]] = {
    400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ValidationErrorOut,
}
BODY_ERRORS: dict[int, type[Schema]] = {**ERRORS, 413: ErrorOut}
CONFLICT: dict[int, type[Schema]] = {409: ConflictOut}


def get_one(queryset: Any, what: str, pk: str) -> Any:
    """The row with this key, or a 404 naming what was asked for."""
    found = queryset.filter(pk=pk).first()
    if found is None:
        raise NotFound(f"no {what} {pk!r}")
    return found
