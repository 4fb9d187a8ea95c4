"""Checkpoint chains and the runs mirrored from them: ``Thread``, ``Checkpoint``, ``Run``."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from forgeui.permissions.roles import team_q

ID_LENGTH = 255


class RunStatus(models.TextChoices):
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"


class InterruptStatus(models.TextChoices):
    PENDING = "pending"
    ANSWERED = "answered"
    CANCELLED = "cancelled"


class ChildPolicy(models.TextChoices):
    LEAVE = "leave"
    CANCEL = "cancel"


class Thread(models.Model):
    """One checkpoint chain; its ``latest_checkpoint_id`` is the compare-and-set cell.

    ``head_seq`` is the position of a recent checkpoint whose head (``runtime.store_kit``)
    is kept whole: the latest one's, or one that the few records after it bring up to
    date. A small head is kept here, in ``head``; a large one in that checkpoint's row,
    written once, so moving the thread on never rewrites it."""

    thread_id = models.CharField(primary_key=True, max_length=ID_LENGTH)
    latest_checkpoint_id = models.CharField(max_length=ID_LENGTH)
    seq = models.PositiveBigIntegerField(default=1, help_text="checkpoints saved so far")
    head = models.TextField(blank=True, default="",
                            help_text="JSON; empty when the head is large (kept in its "
                                      "checkpoint's row) or there is none")
    head_seq = models.PositiveBigIntegerField(
        default=0, help_text="the position whose head is kept whole (0: none, as for a "
                             "fork's first checkpoint, rebuilt from the original's records)")
    # A deleted thread whose records a fork still builds on: hidden, under a new id.
    deleted = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.thread_id


class CheckpointQuerySet(models.QuerySet["Checkpoint"]):
    def of_thread(self, thread_id: str) -> CheckpointQuerySet:
        return self.filter(thread_id=thread_id).order_by("seq")

    def latest_of_thread(self, thread_id: str) -> Checkpoint | None:
        return self.filter(thread_id=thread_id).order_by("-seq").first()


class Checkpoint(models.Model):
    """One saved point of a thread, kept as what its step changed (``record``)."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH)
    # No index of its own: the (thread, seq) constraint's index leads with it.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="checkpoints",
                               db_index=False)
    seq = models.PositiveBigIntegerField(help_text="position in the thread, from 1")
    run_id = models.CharField(max_length=ID_LENGTH)
    parent_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    node = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    status = models.CharField(max_length=16, choices=RunStatus.choices)
    step = models.IntegerField(default=0)
    created_at = models.DateTimeField()
    # For a fork's first checkpoint, the checkpoint (of another thread) its record is a
    # patch against; "" for every other, whose base is its parent.
    base_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    record = models.TextField(help_text="JSON step record (runtime.store_kit)")
    head = models.TextField(blank=True, default="",
                            help_text="JSON; this checkpoint's head, whole, when it is large "
                                      "and its thread keeps it (Thread.head_seq)")

    objects = CheckpointQuerySet.as_manager()

    class Meta:
        constraints = [
            # Also the index behind "latest of thread" and the history listing.
            models.UniqueConstraint(fields=["thread", "seq"], name="forgeui_checkpoint_seq"),
        ]
        indexes = [
            # Which forks build on a thread's records: only fork starts have a base.
            models.Index(fields=["base_id"], name="forgeui_checkpoint_fork_base",
                         condition=~models.Q(base_id="")),
            # The one row of a thread that keeps a large head, found without a scan.
            models.Index(fields=["thread"], name="forgeui_checkpoint_kept_head",
                         condition=~models.Q(head="")),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq} {self.node or '-'} ({self.status})"


class RunQuerySet(models.QuerySet["Run"]):
    def roots(self) -> RunQuerySet:
        return self.filter(parent_run_id__isnull=True)

    def stuck(self, older_than: timedelta) -> RunQuerySet:
        """Root runs left running or failed, with no run of their tree saved lately."""
        cutoff = timezone.now() - older_than
        recent = Run.objects.filter(updated_at__gt=cutoff).values("root_thread_id")
        return self.roots().filter(
            status__in=[RunStatus.RUNNING, RunStatus.FAILED], updated_at__lte=cutoff
        ).exclude(root_thread_id__in=recent)

    def of_tree(self, root_thread_id: str) -> RunQuerySet:
        return self.filter(root_thread_id=root_thread_id).order_by("created_at")

    def visible_to(self, user: object, action: str = "read") -> RunQuerySet:
        """The runs of the teams in which ``user`` may do ``action``."""
        return self.filter(team_q(user, action))


class Run(models.Model):
    """One run of a tree (the root or a sub-agent), mirrored from its latest checkpoint."""

    run_id = models.CharField(primary_key=True, max_length=ID_LENGTH)
    thread_id = models.CharField(max_length=ID_LENGTH, db_index=True)
    root_thread_id = models.CharField(max_length=ID_LENGTH, db_index=True)
    # No database constraint: a child's first checkpoint may be saved before its parent's.
    parent_run = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL,
        db_constraint=False, related_name="children",
    )
    graph = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    team = models.CharField(max_length=64, blank=True, default="", db_default="",
                            db_index=True, help_text="the owning team (FORGE_TEAMS); empty: none")
    namespace = models.JSONField(default=list)
    sub_agent_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    status = models.CharField(max_length=16, choices=RunStatus.choices, db_index=True)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    # Moved by every save of the run, in its transaction: how the store finds the run's
    # latest checkpoint (``load_run``), so checkpoints need no index by run.
    latest_checkpoint_id = models.CharField(max_length=ID_LENGTH)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    # A fork keeps its original's starter (nobody approves their own); who forked is here.
    forked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RunQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{'/'.join(self.namespace) or self.run_id} ({self.status})"
