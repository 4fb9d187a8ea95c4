"""``/api/audit``: the audit log, newest first."""

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate

from forgeui.api.schemas import ERRORS, Page, Text, When
from forgeui.models import AuditEntry

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


@router.get("/audit", response={200: list[AuditOut], **ERRORS})
@paginate(Page)
def list_audit(request: HttpRequest, filters: Query[AuditFilters]) -> Any:
    """Newest first; only the entries of the caller's teams."""
    return filters.apply(AuditEntry.objects.visible_to(request.auth).newest_first())
