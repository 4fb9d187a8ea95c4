"""Which forge user a Slack user acts as: linked once, never guessed from a name.

A link is made by an admin (``manage.py link_slack`` or the admin), by the person
themselves following the signed link Slack shows them when they are not linked yet
(signed for that Slack user, opened while signed in to forge), or, only where
``FORGE_SLACK_LINK_BY_EMAIL`` is on, by the one active forge user whose e-mail is the
Slack account's (Slack verifies it).
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.urls import reverse

from forgeui.models import AuditEntry, SignInMethod
from forgeui.slack import config
from forgeui.slack.models import LinkedVia, SlackLink
from forgeui.team.sign_in import mark, method_of

logger = logging.getLogger(__name__)

SALT = "forgeui.slack.link"
LINK_MAX_AGE_S = 3600


class LinkRefused(ValueError):
    """The Slack user is linked to someone else already, or the link is not valid."""


def acting_user(slack_user_id: str, team_id: str = "") -> Any | None:
    """The active forge user ``slack_user_id`` acts as, marked as signed in via Slack."""
    link = (SlackLink.objects.select_related("user")
            .filter(slack_user_id=slack_user_id).first())
    if link is None and config.link_by_email():
        link = by_email(slack_user_id, team_id)
    if link is None or not link.user.is_active:
        return None
    mark(link.user, SignInMethod.SLACK)
    return link.user


def by_email(slack_user_id: str, team_id: str) -> SlackLink | None:
    """Link by the Slack account's e-mail when exactly one active forge user has it."""
    try:
        profile = config.client().users_info(user=slack_user_id)["user"]["profile"]
    except Exception:
        logger.exception("could not read the Slack profile of %s", slack_user_id)
        return None
    email = str(profile.get("email") or "").strip()
    found = list(get_user_model().objects.filter(email__iexact=email, is_active=True)[:2]) \
        if email else []
    if len(found) != 1:
        return None
    try:
        return link(found[0], slack_user_id, team_id, LinkedVia.EMAIL, by=None)
    except LinkRefused:
        return None


def link(user: Any, slack_user_id: str, team_id: str, via: str, by: Any) -> SlackLink:
    """Link ``user`` to the Slack user (replacing the user's earlier link); audited.
    ``LinkRefused`` when that Slack user already acts as someone else."""
    slack_user_id = slack_user_id.strip()
    if not slack_user_id:
        raise LinkRefused("a Slack user id (such as U012AB3CD) is needed")
    other = SlackLink.objects.filter(slack_user_id=slack_user_id).exclude(user=user).first()
    if other is not None:
        raise LinkRefused(f"Slack user {slack_user_id} is linked to "
                          f"{other.user.get_username()}; unlink it first")
    try:
        with transaction.atomic():
            made, _ = SlackLink.objects.update_or_create(
                user=user, defaults={"slack_user_id": slack_user_id, "team_id": team_id,
                                     "via": via})
            AuditEntry.objects.create(actor=by, sign_in=method_of(by), action="slack.link",
                                      object_type="user", object_id=user.get_username(),
                                      detail={"slack_user_id": slack_user_id, "via": via})
    except IntegrityError:  # linked to someone else at the same moment
        raise LinkRefused(f"Slack user {slack_user_id} is linked to someone else") from None
    return made


def unlink(user: Any, by: Any) -> bool:
    removed, _ = SlackLink.objects.filter(user=user).delete()
    if removed:
        AuditEntry.objects.create(actor=by, sign_in=method_of(by), action="slack.unlink",
                                  object_type="user", object_id=user.get_username(), detail={})
    return bool(removed)


def link_url(slack_user_id: str, team_id: str) -> str:
    """The page that links whoever opens it, signed in, to this Slack user."""
    token = signing.dumps({"u": slack_user_id, "t": team_id}, salt=SALT, compress=True)
    return config.page_url(reverse("slack-link", args=[token]))


def read_token(token: str) -> tuple[str, str]:
    """(Slack user id, team id) of a link; ``LinkRefused`` when forged or expired."""
    try:
        data = signing.loads(token, salt=SALT, max_age=LINK_MAX_AGE_S)
    except signing.BadSignature:
        raise LinkRefused("this link is not valid or has expired: press a button in "
                          "Slack again for a new one") from None
    return str(data.get("u", "")), str(data.get("t", ""))


def how_to_link(slack_user_id: str, team_id: str) -> str:
    """What an unlinked Slack user is told (nothing was decided)."""
    return (f"Nothing was decided: your Slack account is not linked to a forge account. "
            f"Sign in to forge and open {link_url(slack_user_id, team_id)} within an hour, "
            f"or ask an admin to run `manage.py link_slack USERNAME {slack_user_id}`.")
