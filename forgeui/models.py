"""What forge keeps in the database.

``Thread`` and ``Checkpoint`` are the checkpoint store proper (``forgeui.store``); ``Run``
and ``Interrupt`` mirror the checkpoints into rows the inbox and the API can query;
``Answer``, ``SteeringNote`` and ``AuditEntry`` record what people did; ``Event`` is the
monotonic feed a reconnecting websocket catches up from.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connections, models
from django.db.models.functions import Cast
from django.utils import timezone

from . import assignment

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

    ``head`` is the head (``runtime._records``) of the checkpoint at position
    ``head_seq``, whole: the latest one's, or a recent one's that the few records after it
    bring up to date. A large head is rewritten only now and then, so a save writes about
    what its step changed."""

    thread_id = models.CharField(primary_key=True, max_length=ID_LENGTH)
    latest_checkpoint_id = models.CharField(max_length=ID_LENGTH)
    seq = models.PositiveBigIntegerField(default=1, help_text="checkpoints saved so far")
    head = models.TextField(blank=True, default="",
                            help_text="JSON; empty until the thread's first own save "
                                      "(a fork's first checkpoint is rebuilt instead)")
    head_seq = models.PositiveBigIntegerField(
        default=0, help_text="the position whose head ``head`` is (0: none)")
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
    record = models.TextField(help_text="JSON step record (runtime._records)")

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
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = RunQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{'/'.join(self.namespace) or self.run_id} ({self.status})"


class InterruptQuerySet(models.QuerySet["Interrupt"]):
    def pending(self) -> InterruptQuerySet:
        return self.filter(status=InterruptStatus.PENDING)

    def of_tree(self, root_thread_id: str) -> InterruptQuerySet:
        return self.filter(root_thread_id=root_thread_id)

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

    def assigned_to(self, viewer: assignment.Viewer) -> InterruptQuerySet:
        """Pending, and naming ``viewer`` (by name or group) or claimed by them."""
        named = models.Q(claimed_by_id=viewer.user_id) if viewer.user_id else models.Q()
        for token in viewer.tokens():
            named |= models.Q(assignees__contains=token)
        return self.pending().filter(named) if named else self.none()

    def queue_for(self, viewer: assignment.Viewer) -> InterruptQuerySet:
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
    """An interrupt's payload: data to show, never instructions. Deadline, default and
    assignees come from ``ctx.interrupt``'s keyword arguments (the interrupt record), so
    data a graph forwards from a user or a model cannot set them."""


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
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    overdue_at = models.DateTimeField(null=True, blank=True,
                                      help_text="when its deadline passed with no default")

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
        ]

    def __str__(self) -> str:
        return f"{'/'.join(self.namespace)}:{self.node}#{self.order} ({self.status})"

    @property
    def assigned_users(self) -> list[str]:
        return assignment.decode(self.assignees)[0]

    @property
    def assigned_groups(self) -> list[str]:
        return assignment.decode(self.assignees)[1]


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


class Answer(models.Model):
    """A person's answer to one interrupt: accepted in a request, applied by a task."""

    interrupt = models.ForeignKey(Interrupt, on_delete=models.CASCADE, related_name="answers")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    value = models.JSONField(null=True, blank=True)
    steering = models.TextField(blank=True, default="")
    child_policy = models.CharField(
        max_length=8, choices=ChildPolicy.choices, default=ChildPolicy.LEAVE
    )
    expected_checkpoint_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, default="", help_text="how the task ended")

    objects = AnswerQuerySet.as_manager()

    def __str__(self) -> str:
        return f"answer to {self.interrupt_id} by {self.user or 'system'}"


class SteeringNote(models.Model):
    """Guidance for one run (or task), kept apart from answers (SPEC §1.8)."""

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
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, default="", help_text="how the task ended")

    def __str__(self) -> str:
        return f"note on {self.run_id}: {self.text[:40]}"


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


class EventKind(models.TextChoices):
    INTERRUPT_CREATED = "interrupt.created"
    INTERRUPT_ANSWERED = "interrupt.answered"
    INTERRUPT_CANCELLED = "interrupt.cancelled"
    INTERRUPT_UPDATED = "interrupt.updated"  # claimed, released or assigned
    RUN_UPDATED = "run.updated"


class EventQuerySet(models.QuerySet["Event"]):
    def after(self, event_id: int) -> EventQuerySet:
        """What a reconnecting client missed since ``event_id``."""
        return self.filter(id__gt=event_id).order_by("id")

    def last_id(self) -> int:
        """The newest event id (0 when there is none): a page's catch-up cursor."""
        return self.order_by("-id").values_list("id", flat=True).first() or 0


class Event(models.Model):
    """One change the inbox should hear about; the id is the monotonic event id."""

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    interrupt_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    run_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    root_thread_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = EventQuerySet.as_manager()

    def __str__(self) -> str:
        return f"#{self.id} {self.kind}"


class WebhookEvent(models.TextChoices):
    INTERRUPT_CREATED = "interrupt.created"
    INTERRUPT_ANSWERED = "interrupt.answered"
    INTERRUPT_OVERDUE = "interrupt.overdue"
    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"


class WebhookQuerySet(models.QuerySet["Webhook"]):
    def listening_to(self, event: str) -> list[Webhook]:
        """Active hooks subscribed to ``event`` (the list is JSON: filtered in Python)."""
        return [hook for hook in self.filter(active=True) if event in hook.events]


class Webhook(models.Model):
    """An outgoing webhook, configured in the admin (``forgeui.webhooks`` sends them)."""

    name = models.CharField(max_length=100)
    url = models.URLField(max_length=1000)
    secret = models.CharField(max_length=200, help_text="key of the X-Forge-Signature HMAC")
    events = models.JSONField(default=list, blank=True,
                              help_text=f"any of: {', '.join(WebhookEvent.values)}")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = WebhookQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.name} -> {self.url}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one webhook: the delivery log."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32, choices=WebhookEvent.choices)
    event_id = models.BigIntegerField(help_text="the inbox Event it came from")
    body = models.JSONField()
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices,
                              default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        constraints = [models.UniqueConstraint(fields=["webhook", "event_id"],
                                               name="forgeui_delivery_once")]

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook_id}: {self.status} after {self.attempts}"


class NotificationCursor(models.Model):
    """The last inbox Event handed to webhooks and e-mail: one row, id 1."""

    last_event_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"notified up to event {self.last_event_id}"


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True, user__is_active=True)

    def issue(self, user: Any, name: str = "") -> tuple[ApiToken, str]:
        """A new token for ``user``; the secret is returned here once and never stored."""
        secret = ApiToken.new_secret()
        token = self.create(user=user, name=name, prefix=secret[:TOKEN_PREFIX_LENGTH],
                            key_hash=ApiToken.hash(secret))
        return token, secret

    def authenticate(self, secret: str) -> ApiToken | None:
        """The active token whose hash matches ``secret``; its last use is recorded.

        At most once a minute per token, so reads do not each cost a write.
        """
        token = self.active().select_related("user").filter(key_hash=ApiToken.hash(secret)).first()
        now = timezone.now()
        if token is not None and (token.last_used_at is None
                                  or now - token.last_used_at > TOKEN_USE_RESOLUTION):
            self.filter(pk=token.pk).update(last_used_at=now)
        return token

    def revoke(self) -> int:
        return self.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


TOKEN_PREFIX = "forge_"
TOKEN_USE_RESOLUTION = timedelta(minutes=1)
TOKEN_PREFIX_LENGTH = 12


class ApiToken(models.Model):
    """A bearer token for the API. Only a SHA-256 of the secret is kept: a leaked database
    does not leak usable tokens, and the secret's 256 random bits make a salt pointless."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=TOKEN_PREFIX_LENGTH, editable=False,
                              help_text="the secret's first characters, to tell tokens apart")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}{', revoked' if self.revoked_at else ''})"

    @staticmethod
    def new_secret() -> str:
        return TOKEN_PREFIX + secrets.token_urlsafe(32)

    @staticmethod
    def hash(secret: str) -> str:
        return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
