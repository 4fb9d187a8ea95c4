"""Approvals and rejections counted toward an approval policy, one row per person.

An interrupt under a policy stays pending while these accumulate; the answer the run
resumes with is written once the policy is met. The unique constraint is what makes one
person's approval count once, however many requests race.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from .interrupts import Answer, Interrupt


class Vote(models.TextChoices):
    APPROVE = "approve", "approved"
    REJECT = "reject", "rejected"


class ApprovalQuerySet(models.QuerySet["Approval"]):
    def of(self, interrupt_id: str) -> ApprovalQuerySet:
        return self.filter(interrupt_id=interrupt_id).select_related("user").order_by("id")

    def counted_for(self, answers: Iterable[Answer]) -> dict[str, list[Approval]]:
        """The votes each answer's policy counted before people decided it, oldest first,
        by interrupt id (one query for a page of answers)."""
        policy = {a.interrupt_id: a.meta.get("policy") for a in answers
                  if isinstance(a.meta, dict) and a.meta.get("decided_by") == "people"}
        found: dict[str, list[Approval]] = {}
        rows = self.filter(interrupt_id__in=list(policy)).select_related("user").order_by("id")
        for row in rows if policy else ():
            if row.policy == policy[row.interrupt_id]:
                found.setdefault(row.interrupt_id, []).append(row)
        return found


class Approval(models.Model):
    """One person's approve or reject of an interrupt under a policy."""

    interrupt = models.ForeignKey(Interrupt, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                             related_name="+")
    policy = models.CharField(max_length=200, help_text="the policy it counted toward")
    vote = models.CharField(max_length=8, choices=Vote.choices)
    value = models.JSONField(null=True, blank=True, help_text="the answer as given")
    steering = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    objects = ApprovalQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["interrupt", "user"],
                                               name="forgeui_approval_once_per_person")]

    def __str__(self) -> str:
        return f"{self.user} {self.vote}s {self.interrupt_id} ({self.policy})"

    def entry(self) -> dict[str, Any]:
        """This vote as exports and the API give it: whose, which, when, with their note."""
        return {"user": self.user.get_username(), "vote": self.vote,
                "at": self.created_at.isoformat(), "note": self.steering}
