"""API tokens: only a hash is stored; the token is shown once."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from forgeui.permissions.roles import remember_groups

from .audit import AuditEntry


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now(),
                           user__is_active=True)

    def issue(self, user: Any, name: str = "", agent: str = "",
              days: int | None = None) -> tuple[ApiToken, str]:
        """A new token for ``user``, good for ``days`` (``FORGE_TOKEN_DAYS`` unless given);
        the secret is returned here once and never stored."""
        secret = ApiToken.new_secret()
        token = self.create(user=user, name=name, prefix=secret[:TOKEN_PREFIX_LENGTH],
                            key_hash=ApiToken.hash(secret), agent=agent,
                            expires_at=default_expiry(days))
        return token, secret

    def authenticate(self, secret: str) -> ApiToken | None:
        """The active token whose hash matches ``secret``; its last use is recorded.

        At most once a minute per token, so reads do not each cost a write. The first use,
        and the first after an hour unused, open a session of use: that one is audited.
        """
        # The owner's groups come in the same query, one row each: every request asks them.
        rows = list(self.active().select_related("user").filter(key_hash=ApiToken.hash(secret))
                    .annotate(group_name=models.F("user__groups__name")))
        if not rows:
            return None
        token = rows[0]
        remember_groups(token.user, [row.group_name for row in rows if row.group_name is not None])
        if self._opens_session(token):
            AuditEntry.objects.create(
                actor=token.user, action="token.use", object_type="token",
                object_id=str(token.pk),
                detail={"prefix": token.prefix, "name": token.name, "agent": token.agent})
        return token

    def _opens_session(self, token: ApiToken) -> bool:
        """Record this use; true for the one caller whose use opens a session."""
        now, last = timezone.now(), token.last_used_at
        if last is not None and now - last <= TOKEN_USE_RESOLUTION:
            return False
        # Compare-and-set on the last use: of two first uses at once, one opens the session.
        won = self.filter(pk=token.pk, last_used_at=last).update(last_used_at=now) == 1
        return won and (last is None or now - last > TOKEN_SESSION_GAP)

    def revoke(self) -> int:
        return self.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def default_expiry(days: int | None = None) -> datetime:
    """When a token made now expires: ``days`` from now, ``FORGE_TOKEN_DAYS`` by default."""
    return timezone.now() + timedelta(days=settings.FORGE_TOKEN_DAYS if days is None else days)


TOKEN_PREFIX = "forge_"
TOKEN_USE_RESOLUTION = timedelta(minutes=1)
TOKEN_SESSION_GAP = timedelta(hours=1)  # unused this long, the next use is audited again
TOKEN_PREFIX_LENGTH = 12


class ApiToken(models.Model):
    """A bearer token for the API. Only a SHA-256 of the secret is kept: a leaked database
    does not leak usable tokens, and the secret's 256 random bits make a salt pointless."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, default="")
    agent = models.CharField(
        max_length=100, blank=True, default="",
        help_text="set: an agent token, which may ask for approvals and read its own "
                  "requests, and do nothing else")
    prefix = models.CharField(max_length=TOKEN_PREFIX_LENGTH, editable=False,
                              help_text="the secret's first characters, to tell tokens apart")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(default=default_expiry,
                                      help_text="the token stops working at this time")

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}{', revoked' if self.revoked_at else ''})"

    @property
    def state(self) -> str:
        """``revoked``, ``expired`` or ``active``, as the admin lists it."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "active"

    @staticmethod
    def new_secret() -> str:
        return TOKEN_PREFIX + secrets.token_urlsafe(32)

    @staticmethod
    def hash(secret: str) -> str:
        return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
