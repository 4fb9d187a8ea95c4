"""The append-only audit log, kept as a hash chain (``audit_chain``).

Every insert goes through ``AuditEntry.save`` (``objects.create`` included), which appends
under one lock per database, held until the writer's transaction ends:
``pg_advisory_xact_lock`` on PostgreSQL, taken by the function that reads the chain's tip
(migration ``0032``), and the write lock that ``BEGIN IMMEDIATE`` takes on SQLite. ``seq`` is
unique, so two writers can never both extend the same tip. On PostgreSQL a trigger refuses
UPDATE and DELETE as well (migration ``0025``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections, models, router, transaction
from django.db.models.functions import Cast
from django.utils import timezone

from forgeui.permissions import teams
from forgeui.permissions.roles import team_q

from . import audit_chain
from .identities import sign_in_field
from .runs import ID_LENGTH, Run, RunStatus

# Any fixed number: every writer of the chain takes this one transaction-level lock. It is
# held until the writer commits, so the frequent writers (a start, an answer, a cancel)
# append their entry as their transaction's last statement.
CHAIN_LOCK = 0x666F726765617564  # "forgeaud"
THREAD_DELETED = "thread.delete"


class AppendOnly(Exception):
    """Raised when code tries to change or remove an audit entry."""


class AuditQuerySet(models.QuerySet["AuditEntry"]):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("audit entries cannot be changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit entries cannot be deleted")

    def bulk_create(self, objs: Iterable[AuditEntry], *args: Any,
                    **kwargs: Any) -> list[AuditEntry]:
        """Entries appended one after another: each needs the hash of the one before."""
        made = list(objs)
        with transaction.atomic(using=self.db):
            for entry in made:
                entry.save(using=self.db)
        return made

    def visible_to(self, user: object) -> AuditQuerySet:
        """The entries of the teams whose history ``user`` may read."""
        return self.filter(team_q(user))

    def chain_records(self, after: int = 0) -> Iterator[dict[str, Any]]:
        """The chain from entry ``after + 1`` on, as the records ``audit_chain`` checks."""
        # The details as the database's own JSON text: parsed here once, as the chain
        # reads numbers (``audit_chain.number``), not decoded by the field and walked again.
        columns = [name if name != "detail" else "detail_text" for name in CHAIN_COLUMNS]
        rows = (self.filter(seq__gt=after).order_by("seq")
                .annotate(detail_text=Cast("detail", models.TextField()))
                .values_list(*columns).iterator(chunk_size=5000))
        for row in rows:
            yield record_of(row, detail_text=True)

    def resume_point(self, seq: int) -> tuple[int, str] | None:
        """``(seq - 1, the hash entry seq follows)``, for a walk that goes on from entry
        ``seq``; None when there is no such entry."""
        found = self.filter(seq=seq).values_list("prev_hash", flat=True).first()
        return (seq - 1, found) if found is not None else None

    def tip_seq(self) -> int:
        """The newest entry's ``seq``; 0 for an empty log."""
        return self.order_by("-seq").values_list("seq", flat=True).first() or 0

    def has_hash_after(self, entry_hash: str, record: dict[str, Any]) -> bool:
        """Whether an entry after ``record`` (a ``chain_records`` item) has this hash."""
        return self.filter(entry_hash=entry_hash, seq__gt=record["seq"]).exists()

    def accepted_start(self, request_id: str) -> tuple[Any, int | None] | None:
        """The input of run start ``request_id`` and who started it (while their account
        exists), as its ``run.start`` entry recorded them; None for no such start."""
        # Hand-written, as the tip's read: every run's start asks it.
        entries = AuditEntry._meta.db_table
        users = AuditEntry._meta.get_field("actor").related_model._meta.db_table
        with connections[self.db].cursor() as cursor:
            cursor.execute(f"SELECT e.detail, u.id FROM {entries} e LEFT JOIN {users} u"
                           " ON u.id = e.actor_id WHERE e.action = 'run.start'"
                           " AND e.run_id = %s LIMIT 1", [request_id])
            found = cursor.fetchone()
        if found is None:
            return None
        detail, actor_id = found
        return json.loads(detail).get("input"), actor_id  # jsonb comes as text, as on SQLite

    def starts_never_begun(self, older_than: timedelta) -> AuditQuerySet:
        """Run starts accepted at least ``older_than`` ago whose run was never made.

        The start's task was lost: a worker killed just as it took the job, or a Redis that
        restarted with the job queued. A start refused because another start on its thread
        began after it (it was accepted as its thread's first) is not one of them, nor one
        whose thread was deleted after it.
        """
        made = Run.objects.filter(pk=models.OuterRef("run_id"))
        taken = Run.objects.filter(thread_id=models.OuterRef("thread_id"),
                                   created_at__gte=models.OuterRef("created_at"))
        deleted = AuditEntry.objects.filter(action=THREAD_DELETED,
                                            thread_id=models.OuterRef("thread_id"),
                                            seq__gt=models.OuterRef("seq"))
        return (self.filter(action="run.start", created_at__lte=timezone.now() - older_than)
                .exclude(models.Exists(made)).exclude(models.Exists(taken))
                .exclude(models.Exists(deleted)).order_by("created_at"))

    def cancels_not_applied(self, older_than: timedelta) -> AuditQuerySet:
        """Run cancels accepted at least ``older_than`` ago whose run is still paused or
        failed: the cancel's task was lost. A run mid-node is left to its executor, which
        applies a cancel its run recorded; one never recorded is found once it pauses."""
        waiting = Run.objects.filter(pk=models.OuterRef("run_id"),
                                     status__in=[RunStatus.INTERRUPTED, RunStatus.FAILED])
        return (self.filter(action="run.cancel", created_at__lte=timezone.now() - older_than)
                .filter(models.Exists(waiting)).order_by("created_at"))

    def newest_first(self) -> AuditQuerySet:
        return self.order_by("-created_at", "-id")

    def matching(self, actor: str = "", action: str = "", obj: str = "",
                 since: datetime | None = None, until: datetime | None = None) -> AuditQuerySet:
        """The audit page's filters; an empty filter matches everything."""
        found = self
        if actor:
            found = found.filter(actor_name=actor)
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

    # The id outlives its account (no constraint, nothing done on delete): the chain hashes
    # it, so a deleted user's entries still verify and a changed id does not.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.DO_NOTHING,
        db_constraint=False, related_name="+",
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
    # Not hashed: which team's auditors read an entry, not part of what it says.
    team = models.CharField(max_length=64, blank=True, default="", db_default="",
                            db_index=True, help_text="whose auditors read it; empty: plain roles")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # The chain: the actor's name is kept as written, so a renamed or deleted user leaves
    # the hashed content as it was; pages and exports show this name, not the account's.
    actor_name = models.CharField(max_length=150, blank=True, default="", editable=False)
    chain_version = models.PositiveSmallIntegerField(default=audit_chain.VERSION,
                                                     editable=False)
    seq = models.BigIntegerField(unique=True, editable=False)
    prev_hash = models.CharField(max_length=64, editable=False)
    entry_hash = models.CharField(max_length=64, editable=False)

    objects = AuditQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("audit entries cannot be changed")
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        if not self.team and self.run_id and teams.enabled():
            self.team = (Run.objects.using(using).filter(pk=self.run_id)
                         .values_list("team", flat=True).first() or "")
        self.actor_name = self.actor.get_username() if self.actor is not None else ""
        self.chain_version = audit_chain.VERSION
        self.created_at = self.created_at or timezone.now()
        # No savepoint inside a caller's transaction: an entry that fails to save fails
        # the work it records, and each savepoint is two more statements under the lock.
        with transaction.atomic(using=using, savepoint=False):
            self._append(using)

    def _append(self, using: str) -> None:
        """Take the chain's lock, hash this entry onto the newest one and insert it.

        Every writer waits while the lock is held, so it is held for two statements (the
        tip, then the row) with only the hash computed between them; the insert is
        written here, as the ORM's takes longer to build than to run.
        """
        connection = connections[using]
        record = self.record()  # its seq filled in once the tip is known
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":  # the lock, then a fresh read of the tip
                cursor.execute("SELECT seq, entry_hash FROM forgeui_audit_tip(%s)",
                               [CHAIN_LOCK])
            else:  # SQLite: the write lock was taken at BEGIN
                cursor.execute(f"SELECT seq, entry_hash FROM {AuditEntry._meta.db_table} "
                               "ORDER BY seq DESC LIMIT 1")
            tip = cursor.fetchone()
            self.seq, self.prev_hash = (tip[0] + 1, tip[1]) if tip else (1, audit_chain.GENESIS)
            record["seq"] = self.seq
            self.entry_hash = audit_chain.entry_hash(self.prev_hash, record)
            cursor.execute(_insert_sql(connection), [
                field.get_db_prep_save(field.pre_save(self, True), connection)
                for field in _INSERTED])
            self.pk = cursor.fetchone()[0]
        self._state.adding, self._state.db = False, using

    def record(self) -> dict[str, Any]:
        """This entry as the chain hashes it and an export writes it."""
        return record_of(tuple(getattr(self, name) for name in CHAIN_COLUMNS))

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit entries cannot be deleted")


# The columns of the first chain version (migration 0025 chains with them), then those
# later versions add.
RECORD_COLUMNS = ("seq", "created_at", "actor_name", "sign_in", "action",
                  *audit_chain.TARGET_FIELDS, "detail", "prev_hash", "entry_hash")
CHAIN_COLUMNS = (*RECORD_COLUMNS, "chain_version", "actor_id")


_INSERTED = [field for field in AuditEntry._meta.concrete_fields if not field.primary_key]


def _insert_sql(connection: Any) -> str:
    """The INSERT of one entry, returning its id (SQLite has had RETURNING since 3.35)."""
    quote, meta = connection.ops.quote_name, AuditEntry._meta
    return (f"INSERT INTO {quote(meta.db_table)} "
            f"({', '.join(quote(field.column) for field in _INSERTED)}) "
            f"VALUES ({', '.join(['%s'] * len(_INSERTED))}) RETURNING {quote(meta.pk.column)}")


def record_of(row: tuple[Any, ...], detail_text: bool = False) -> dict[str, Any]:
    """A chain record from ``RECORD_COLUMNS`` (or ``CHAIN_COLUMNS``) values; the detail as a
    value or as JSON."""
    seq, created_at, actor, sign_in, action, *rest = row[:len(RECORD_COLUMNS)]
    *target, detail, prev_hash, entry_hash = rest
    version, actor_id = row[len(RECORD_COLUMNS):] or (1, None)
    details = audit_chain.loads(detail) if detail_text else audit_chain.plain(detail)
    return {"seq": seq, "timestamp": audit_chain.timestamp(created_at), "actor": actor or None,
            "sign_in": sign_in, "action": action,
            "target": dict(zip(audit_chain.TARGET_FIELDS, target, strict=True)),
            "details": details, "prev_hash": prev_hash, "hash": entry_hash,
            "version": version, "actor_id": actor_id}
