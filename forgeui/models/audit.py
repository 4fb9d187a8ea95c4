"""The append-only audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from .identities import sign_in_field
from .runs import ID_LENGTH


class AppendOnly(Exception):
    """Raised when code tries to change or remove an audit entry."""


class AuditQuerySet(models.QuerySet["AuditEntry"]):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("audit entries cannot be changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit entries cannot be deleted")

    def newest_first(self) -> AuditQuerySet:
        return self.select_related("actor").order_by("-created_at", "-id")

    def matching(self, actor: str = "", action: str = "", obj: str = "",
                 since: datetime | None = None, until: datetime | None = None) -> AuditQuerySet:
        """The audit page's filters; an empty filter matches everything."""
        found = self
        if actor:
            found = found.filter(actor__username=actor)
        if action:
            found = found.filter(action__startswith=action)
        if obj:
            found = found.filter(models.Q(object_id=obj) | models.Q(run_id=obj)
                                 | models.Q(thread_id=obj))
        if since:
            found = found.filter(created_at__gte=since)
        if until:
            found = found.filter(created_at__lt=until)
        return found


class AuditEntry(models.Model):
    """Who did what to which run, and where the checkpoint chain stood before and after."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    sign_in = sign_in_field()
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64, blank=True, default="")
    object_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    run_id = models.CharField(max_length=ID_LENGTH, blank=True, default="", db_index=True)
    thread_id = models.CharField(max_length=ID_LENGTH, blank=True, default="", db_index=True)
    before_checkpoint_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    after_checkpoint_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor or 'system'} {self.action}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("audit entries cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit entries cannot be deleted")
