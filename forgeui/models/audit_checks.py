"""Walks over the whole audit chain, and the stored outcome of the latest one.

A walk reads every entry, so the audit page shows the last stored outcome instead of
walking on each load; ``manage.py verify_audit`` and the periodic sweep store new ones.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone

from . import audit_chain
from .audit import AuditEntry


class ChainCheckQuerySet(models.QuerySet["ChainCheck"]):
    def latest_passed(self) -> ChainCheck | None:
        return self.filter(broken_kind="").order_by("-id").first()

    def newest(self) -> ChainCheck | None:
        return self.order_by("-id").first()


class ChainCheck(models.Model):
    """One walk over the chain: how far it held, and the first break if there was one."""

    checked_at = models.DateTimeField(default=timezone.now)
    entries = models.BigIntegerField()
    last_seq = models.BigIntegerField()
    last_hash = models.CharField(max_length=64)
    broken_kind = models.CharField(max_length=32, blank=True, default="")
    broken_seq = models.BigIntegerField(null=True, blank=True)
    message = models.TextField(blank=True, default="")
    # False: the walk went on from the last verified tip instead of from the first entry.
    full = models.BooleanField(default=True)

    objects = ChainCheckQuerySet.as_manager()

    class Meta:
        verbose_name = "audit chain check"

    def __str__(self) -> str:
        held = "verified" if self.passed else f"broken at {self.broken_seq}"
        return f"{self.checked_at:%Y-%m-%d %H:%M:%S} {held} up to {self.last_seq}"

    @property
    def passed(self) -> bool:
        return not self.broken_kind


def verify_chain(using: str = "default") -> audit_chain.Verdict:
    """Walk the whole chain in ``using`` and store the outcome.

    The tip of the last walk that passed is the anchor: the chain must still reach it
    unchanged, so a removed or rewritten tail is caught as well.
    """
    entries = AuditEntry.objects.using(using)
    anchor = ChainCheck.objects.using(using).latest_passed()
    verdict = audit_chain.walk(entries.chain_records(), entries.has_hash_after,
                               (anchor.last_seq, anchor.last_hash) if anchor else None)
    broken = verdict.broken
    ChainCheck.objects.using(using).create(
        entries=verdict.entries, last_seq=verdict.last_seq, last_hash=verdict.last_hash,
        broken_kind=broken.kind if broken else "", broken_seq=broken.seq if broken else None,
        message=broken.message if broken else "")
    return verdict


def verify_when_due(every: timedelta, using: str = "default") -> audit_chain.Verdict | None:
    """Walk the chain if the last walk is older than ``every``; the periodic sweep's step."""
    newest = ChainCheck.objects.using(using).newest()
    if newest is not None and timezone.now() - newest.checked_at < every:
        return None
    return verify_chain(using)
