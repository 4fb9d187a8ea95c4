"""How people sign in: the method a decision was made under, and single sign-on links."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class SignInMethod(models.TextChoices):
    """How the person behind a request proved who they are."""

    PASSWORD = "password", "password"
    SSO = "sso", "single sign-on"
    TOKEN = "token", "API token"
    SLACK = "slack", "Slack (a linked account)"


def sign_in_field() -> models.CharField:
    """The column every decision record keeps beside its person; empty for the system."""
    return models.CharField(max_length=8, choices=SignInMethod.choices, blank=True, default="",
                            help_text="how the person signed in (empty: the system)")


# ``create_token --agent NAME`` signs agents in as the user ``agent:NAME``: no person's
# account may ever carry such a name.
AGENT_USER_PREFIX = "agent:"


def reserved_for_agents(username: str) -> bool:
    """Whether ``username`` is (or could be mistaken for) an agent's identity."""
    return username.strip().casefold().startswith(AGENT_USER_PREFIX)


class SsoIdentity(models.Model):
    """The provider's account (issuer and subject) a forge user signs in as.

    Users are found by this link, never by a matching e-mail or username, so an account
    at the provider cannot take over a local account that happens to share its name.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="sso_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "SSO identities"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"],
                                               name="forgeui_sso_identity_unique")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
