"""Interrupts mirrored from checkpoints, and what people did to them: answers and notes."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connections, models
from django.db.models.functions import Cast
from django.utils import timezone

from forgeui.permissions.roles import team_q

from .assignees import NamedViewer, decode
from .identities import sign_in_field
from .runs import ID_LENGTH, ChildPolicy, InterruptStatus, Run

# Interrupt kinds of the static breakpoints (``interrupt_before`` / ``interrupt_after``):
# their answer is only recorded, so the one way to stop the guarded node is a cancel.
BREAKPOINT_KINDS = ("before", "after")


class InterruptQuerySet(models.QuerySet["Interrupt"]):
    def pending(self) -> InterruptQuerySet:
        return self.filter(status=InterruptStatus.PENDING)

    def of_tree(self, root_thread_id: str) -> InterruptQuerySet:
        return self.filter(root_thread_id=root_thread_id)

    def visible_to(self, user: object, action: str = "read") -> InterruptQuerySet:
        """The interrupts of the teams in which ``user`` may do ``action``."""
        return self.filter(team_q(user, action))

    def inbox(self) -> InterruptQuerySet:
        """Pending interrupts, oldest first, with the run they pause."""
        return self.pending().select_related("run").order_by("created_at", "order")

    def of_graph(self, graph: str) -> InterruptQuerySet:
        """Interrupts of runs of ``graph`` (a child run carries its root's graph); "" = all."""
        return self.filter(run__graph=graph) if graph else self

    def of_sub_agent(self, sub_agent_id: str) -> InterruptQuerySet:
        return self.filter(sub_agent_id=sub_agent_id) if sub_agent_id else self

    def under_namespace(self, prefix: list[str]) -> InterruptQuerySet:
        """Interrupts whose run-tree path starts with ``prefix`` (element by element)."""
        found = self
        for index, part in enumerate(prefix):
            found = found.filter(**{f"namespace__{index}": part})
        return found

    def assigned_to(self, viewer: NamedViewer) -> InterruptQuerySet:
        """Pending, and naming ``viewer`` (by name or group) or claimed by them."""
        named = models.Q(claimed_by_id=viewer.user_id) if viewer.user_id else models.Q()
        for token in viewer.tokens():
            named |= models.Q(assignees__contains=token)
        return self.pending().filter(named) if named else self.none()

    def queue_for(self, viewer: NamedViewer) -> InterruptQuerySet:
        """Pending, unclaimed, and answerable by ``viewer``."""
        if not viewer.can_answer:
            return self.none()
        open_ = self.pending().filter(claimed_by__isnull=True)
        if viewer.unrestricted:
            return open_
        named = models.Q(assignees="")
        for token in viewer.tokens():
            named |= models.Q(assignees__contains=token)
        return open_.filter(named)

    def overdue(self, now: datetime) -> InterruptQuerySet:
        """Pending past their deadline and not yet handled (answered by default or flagged)."""
        return self.pending().filter(deadline_at__lte=now, overdue_at__isnull=True)

    def search(self, text: str) -> InterruptQuerySet:
        """Interrupts whose payload or run input mention ``text`` ("" = all).

        PostgreSQL: full-text search (``websearch`` syntax, English stemming) over both
        JSON documents as text. Elsewhere (SQLite): every word must appear, ignoring case,
        in the payload's or the input's JSON text.
        """
        text = text.strip()
        if not text:
            return self
        if connections[self.db].vendor == "postgresql":
            vector = SearchVector(Cast("payload", models.TextField()),
                                  Cast("run__input", models.TextField()), config="english")
            query = SearchQuery(text, config="english", search_type="websearch")
            return self.annotate(search_vector=vector).filter(search_vector=query)
        found = self
        for word in text.split():
            found = found.filter(models.Q(payload__icontains=word)
                                 | models.Q(run__input__icontains=word))
        return found

    def by_deadline(self) -> InterruptQuerySet:
        """Soonest deadline first; those without one last, oldest first."""
        return self.order_by(models.F("deadline_at").asc(nulls_last=True), "created_at", "id")

    def done_by(self, user_id: int | None) -> InterruptQuerySet:
        return self.filter(status=InterruptStatus.ANSWERED, answered_by_id=user_id)

    def by_age(self, newest_first: bool = False) -> InterruptQuerySet:
        if newest_first:
            return self.order_by("-created_at", "-order", "-id")
        return self.order_by("created_at", "order", "id")


class PayloadField(models.JSONField):
    """An interrupt's payload: data to show, never instructions. Deadline, default,
    assignees and the summary's fields come from ``ctx.interrupt``'s keyword arguments
    (the interrupt record), so data a graph forwards from a user or a model cannot set
    them."""


class Interrupt(models.Model):
    """One pending or ended interrupt of one run."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="interrupts")
    thread_id = models.CharField(max_length=ID_LENGTH)
    root_thread_id = models.CharField(max_length=ID_LENGTH, db_index=True)
    node = models.CharField(max_length=ID_LENGTH)
    task_id = models.CharField(max_length=ID_LENGTH)
    namespace = models.JSONField(default=list)
    sub_agent_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    checkpoint_id = models.CharField(max_length=ID_LENGTH)
    payload = PayloadField(null=True, blank=True)
    order = models.IntegerField(default=0)
    kind = models.CharField(max_length=16, default="node")
    has_default = models.BooleanField(default=False)
    default = models.JSONField(null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=InterruptStatus.choices, default=InterruptStatus.PENDING
    )
    created_at = models.DateTimeField(default=timezone.now)
    deadline_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    assignees = models.TextField(blank=True, default="",
                                 help_text="who may answer (empty: anyone with the role)")
    summary_fields = models.JSONField(
        default=list, blank=True,
        help_text="payload keys its one-line summary shows (ctx.interrupt's summary=)")
    sensitive = models.JSONField(
        default=list, blank=True,
        help_text="payload keys shown only to who may answer (ctx.interrupt's sensitive=)")
    team = models.CharField(max_length=64, blank=True, default="", db_default="",
                            help_text="the team that owns it (FORGE_TEAMS); empty: none")
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    overdue_at = models.DateTimeField(null=True, blank=True,
                                      help_text="when its deadline passed with no default")
    escalated_at = models.DateTimeField(null=True, blank=True,
                                        help_text="when its approval policy reassigned it")

    objects = InterruptQuerySet.as_manager()

    class Meta:
        indexes = [
            # The inbox: only what is pending, oldest first. Partial, so it stays the
            # inbox's size however long the history grows, and so a save closing an
            # interrupt (``id = %s AND status = %s``, a prepared statement on PostgreSQL)
            # can only find it by primary key: with ``status`` leading an index, a generic
            # plan made before the table was analysed walked every pending row.
            models.Index(fields=["created_at", "order"], name="forgeui_interrupt_pending",
                         condition=models.Q(status=InterruptStatus.PENDING)),
            # One team's inbox, and the history a team's auditor reads.
            models.Index(fields=["team", "created_at", "order"],
                         name="forgeui_interrupt_team_pending",
                         condition=models.Q(status=InterruptStatus.PENDING)),
            models.Index(fields=["team", "created_at"], name="forgeui_interrupt_team"),
        ]

    def __str__(self) -> str:
        return f"{'/'.join(self.namespace)}:{self.node}#{self.order} ({self.status})"

    @property
    def is_breakpoint(self) -> bool:
        return self.kind in BREAKPOINT_KINDS

    @property
    def assigned_users(self) -> list[str]:
        return decode(self.assignees)[0]

    @property
    def assigned_groups(self) -> list[str]:
        return decode(self.assignees)[1]


class AnswerQuerySet(models.QuerySet["Answer"]):
    def unapplied(self, older_than: timedelta = timedelta(0)) -> AnswerQuerySet:
        return self.filter(applied_at__isnull=True,
                           created_at__lte=timezone.now() - older_than)

    def mark_applied(self, answer_id: int, outcome: str) -> int:
        """Only the first marking counts; a duplicated task finds nothing left to mark."""
        now = timezone.now()
        marked = self.filter(pk=answer_id, applied_at__isnull=True).update(
            applied_at=now, outcome=outcome
        )
        SteeringNote.objects.filter(answer_id=answer_id, applied_at__isnull=True).update(
            applied_at=now, outcome=outcome
        )
        return marked


class AnswerKind(models.TextChoices):
    ANSWER = "answer", "answered"
    # The run was cancelled at a breakpoint instead: no value, a reason.
    CANCEL = "cancel", "cancelled at breakpoint"


class Answer(models.Model):
    """A person's decision on one interrupt: accepted in a request, applied by a task.

    Usually a value the paused node receives; at a breakpoint it may instead be a cancel
    of the paused run (``kind`` cancel, with the ``reason``)."""

    interrupt = models.ForeignKey(Interrupt, on_delete=models.CASCADE, related_name="answers")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    sign_in = sign_in_field()
    kind = models.CharField(max_length=8, choices=AnswerKind.choices, default=AnswerKind.ANSWER)
    value = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="", help_text="why the run was cancelled")
    steering = models.TextField(blank=True, default="")
    child_policy = models.CharField(
        max_length=8, choices=ChildPolicy.choices, default=ChildPolicy.LEAVE
    )
    expected_checkpoint_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, default="", help_text="how the task ended")
    meta = models.JSONField(default=dict, blank=True,
                            help_text="what the run reads beside the value: the policy met, "
                                      "who approved")

    objects = AnswerQuerySet.as_manager()

    def __str__(self) -> str:
        what = "cancel at" if self.cancels_run else "answer to"
        return f"{what} {self.interrupt_id} by {self.user or 'system'}"

    @property
    def cancels_run(self) -> bool:
        return self.kind == AnswerKind.CANCEL


class SteeringNoteQuerySet(models.QuerySet["SteeringNote"]):
    def unapplied(self, older_than: timedelta = timedelta(0)) -> SteeringNoteQuerySet:
        """Notes given on their own (one with an answer goes with it) not yet applied."""
        return self.filter(answer__isnull=True, applied_at__isnull=True,
                           created_at__lte=timezone.now() - older_than)


class SteeringNote(models.Model):
    """Guidance for one run (or task), kept apart from answers."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steering_notes")
    interrupt = models.ForeignKey(
        Interrupt, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes"
    )
    # Set when the note came with an answer: it reaches the runtime with that answer.
    answer = models.ForeignKey(
        Answer, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes"
    )
    task_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    sign_in = sign_in_field()
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, default="", help_text="how the task ended")

    objects = SteeringNoteQuerySet.as_manager()

    def __str__(self) -> str:
        return f"note on {self.run_id}: {self.text[:40]}"
