"""``/api/audit``: the audit log, newest first."""

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate

from forgeui.api.schemas import ERRORS, Page, Text, When
from forgeui.models import AuditEntry, Interrupt
from forgeui.permissions.roles import Action, allowed
from forgeui.team.sensitive import mask

router = Router(tags=["forge"])


class AuditOut(Schema):
    id: int
    actor: str | None
    sign_in: str = Field(description="how the actor signed in: password, sso, token; "
                                     "empty for the system")
    action: str
    object_type: str
    object_id: str
    run_id: str
    thread_id: str
    before_checkpoint_id: str
    after_checkpoint_id: str
    detail: dict[str, Any]
    created_at: datetime

    @staticmethod
    def resolve_actor(obj: Any) -> str | None:
        return obj.actor_name or None  # the name the audit chain hashed


class AuditFilters(Schema):
    actor: Text | None = Field(None, description="username")
    action: Text | None = Field(None, description="action prefix: 'answer' also matches "
                                                  "'answer.refused'")
    object: Text | None = Field(None, description="an object, run or thread id")
    created_after: When | None = None
    created_before: When | None = None

    def apply(self, found: Any) -> Any:
        return found.matching(actor=self.actor or "", action=self.action or "",
                              obj=self.object or "", since=self.created_after,
                              until=self.created_before)


class MaskedPages:
    """Entries a page at a time, an interrupt's sensitive keys masked in the details (an
    answer's value) for a caller who may not answer it: one query per page."""

    def __init__(self, found: Any, user: Any) -> None:
        self.found, self.user = found, user

    def __len__(self) -> int:
        return int(self.found.count())

    def __getitem__(self, index: slice) -> list[AuditEntry]:
        rows = list(self.found[index])
        hidden = {row.object_id for row in rows if row.object_type == "interrupt"
                  and not allowed(self.user, Action.ANSWER, row.team)}
        keys = dict(Interrupt.objects.filter(pk__in=hidden).exclude(sensitive=[])
                    .values_list("pk", "sensitive")) if hidden else {}
        for row in rows:
            if row.object_type == "interrupt" and row.object_id in keys:
                row.detail = mask(row.detail, keys[row.object_id])  # shown, never saved
        return rows


@router.get("/audit", response={200: list[AuditOut], **ERRORS})
@paginate(Page)
def list_audit(request: HttpRequest, filters: Query[AuditFilters]) -> Any:
    """Newest first; only the entries of the caller's teams, sensitive keys masked for
    who may not answer."""
    found = filters.apply(AuditEntry.objects.visible_to(request.auth).newest_first())
    return MaskedPages(found, request.auth)
