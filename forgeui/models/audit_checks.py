"""Walks over the whole audit chain, and the stored outcome of the latest one.

The audit page shows the last stored outcome instead of walking on each load;
``manage.py verify_audit`` (a full walk) and the periodic sweep (mostly walks that go on
from the last verified tip) store new ones.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
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


def verify_chain(using: str = "default", full: bool = True) -> audit_chain.Verdict:
    """Walk the chain in ``using`` and store the outcome.

    The tip of the last walk that passed is the anchor: the chain must still reach it
    unchanged, so a removed or rewritten tail is caught as well. Not ``full``, the walk
    starts at that tip (its content and hash checked again) and reads only what came after,
    so it costs what was written since; a full walk is what catches an older entry changed.
    """
    entries = AuditEntry.objects.using(using)
    anchor = ChainCheck.objects.using(using).latest_passed()
    tip = (anchor.last_seq, anchor.last_hash) if anchor else None
    start = None if full or tip is None else entries.resume_point(tip[0])
    records = entries.chain_records(after=start[0] if start else 0)
    verdict = audit_chain.walk(records, entries.has_hash_after, tip, start)
    broken = verdict.broken
    ChainCheck.objects.using(using).create(
        entries=verdict.entries, last_seq=verdict.last_seq, last_hash=verdict.last_hash,
        broken_kind=broken.kind if broken else "", broken_seq=broken.seq if broken else None,
        message=broken.message if broken else "", full=start is None)
    return verdict


def chain_check_every() -> timedelta:
    """How often the sweep checks the chain from its last verified tip: cheap, so often."""
    return timedelta(seconds=float(getattr(settings, "FORGE_AUDIT_VERIFY_SECONDS", 60)))


def full_chain_check_every() -> timedelta:
    """How often the walk starts at the first entry instead, to catch an older one changed."""
    return timedelta(seconds=float(getattr(settings, "FORGE_AUDIT_FULL_VERIFY_SECONDS", 86400)))


def verify_when_due(using: str = "default") -> audit_chain.Verdict | None:
    """The periodic sweep's step: once the last walk is older than ``chain_check_every``,
    go on from the last verified tip, or walk the whole chain if no full walk is newer
    than ``full_chain_check_every``."""
    checks = ChainCheck.objects.using(using)
    newest, now = checks.newest(), timezone.now()
    if newest is not None and now - newest.checked_at < chain_check_every():
        return None
    last_full = checks.filter(full=True).order_by("-id").first()
    full = last_full is None or now - last_full.checked_at >= full_chain_check_every()
    return verify_chain(using, full=full)
