"""Who a Slack user is in forge, and the Slack message showing each interrupt."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from forgeui.models import Interrupt


class LinkedVia(models.TextChoices):
    PROFILE = "profile", "signed link from their forge profile"
    COMMAND = "command", "manage.py link_slack"
    ADMIN = "admin", "the admin"
    EMAIL = "email", "matching verified e-mail"


class SlackLink(models.Model):
    """A Slack user acting as one forge user; found by the Slack user id, never by name."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="slack_link")
    slack_user_id = models.CharField(max_length=32, unique=True)
    team_id = models.CharField(max_length=32, blank=True, default="")
    via = models.CharField(max_length=8, choices=LinkedVia.choices, default=LinkedVia.ADMIN)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "forgeui"

    def __str__(self) -> str:
        return f"{self.slack_user_id} as {self.user}"


class SlackMessage(models.Model):
    """The Slack message of one interrupt, and how far it is from the interrupt's state.

    Every event about the interrupt raises ``wanted``; a sync that rendered the state at
    ``wanted`` = N sets ``synced`` to N. ``leased_until`` keeps two syncs of one message
    from posting it twice without holding a database lock across the HTTP call."""

    interrupt = models.ForeignKey(Interrupt, on_delete=models.CASCADE,
                                  related_name="slack_messages")
    route = models.CharField(max_length=64, help_text="where forge sent it: a channel id, "
                                                      "or a linked user's id for their DM")
    channel = models.CharField(max_length=64, help_text="the channel Slack posted it in")
    ts = models.CharField(max_length=32, blank=True, default="",
                          help_text="Slack's id of the message once posted")
    wanted = models.PositiveIntegerField(default=1)
    synced = models.PositiveIntegerField(default=0)
    leased_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="failed calls in a row")
    last_error = models.TextField(blank=True, default="")
    drafts = models.JSONField(default=dict, blank=True,
                              help_text="per Slack user, the calls chosen so far")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "forgeui"
        constraints = [models.UniqueConstraint(fields=["interrupt", "route"],
                                               name="slack_message_once_per_route")]

    def __str__(self) -> str:
        return f"{self.interrupt_id} in {self.channel} ({self.ts or 'not posted'})"
