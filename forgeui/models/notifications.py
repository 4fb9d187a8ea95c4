"""Outgoing webhooks, their delivery log, and the notifications' cursor in the feed."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


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

    def for_team(self, team: str | None) -> WebhookQuerySet:
        """The hooks told of an object of ``team`` (None: its rows are gone): those of
        every team, and that team's own."""
        every = models.Q(team="")
        return self.filter(every | models.Q(team=team) if team else every)


class Webhook(models.Model):
    """An outgoing webhook, configured in the admin (``forgeui.notifications`` sends them)."""

    name = models.CharField(max_length=100)
    url = models.URLField(max_length=1000)
    secret = models.CharField(max_length=200, help_text="key of the X-Forge-Signature HMAC")
    events = models.JSONField(default=list, blank=True,
                              help_text=f"any of: {', '.join(WebhookEvent.values)}")
    active = models.BooleanField(default=True)
    team = models.CharField(max_length=64, blank=True, default="", db_default="",
                            help_text="only this team's events (FORGE_TEAMS); empty: every "
                                      "team's and those of no team")
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
