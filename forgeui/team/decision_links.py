"""Links to one decision, bound to the person they were e-mailed to.

A link's token is signed (``django.core.signing``, salted for this use) and names its
recipient and interrupt; it is good for ``FORGE_DECISION_LINK_MAX_AGE`` seconds. Following
it only opens the interrupt page, after sign-in, for that recipient: a GET never decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse

SALT = "forgeui.decision-link"


class LinkInvalid(Exception):
    """The token was not made here (or was changed)."""


class LinkExpired(LinkInvalid):
    """The token was made here, longer ago than links last."""


@dataclass(frozen=True, slots=True)
class DecisionLink:
    user_id: int
    interrupt_id: str


def token_for(user: Any, interrupt_id: str) -> str:
    return signing.dumps({"u": user.pk, "i": interrupt_id}, salt=SALT, compress=True)


def url_for(user: Any, interrupt_id: str) -> str:
    """The absolute address an e-mail to ``user`` carries."""
    return settings.FORGE_BASE_URL + reverse("forgeui:decision-link",
                                             args=[token_for(user, interrupt_id)])


def read(token: str) -> DecisionLink:
    """What ``token`` names, or ``LinkExpired`` / ``LinkInvalid``."""
    try:
        data = signing.loads(token, salt=SALT, max_age=settings.FORGE_DECISION_LINK_MAX_AGE)
    except signing.SignatureExpired as exc:
        raise LinkExpired("this link has expired") from exc
    except signing.BadSignature as exc:
        raise LinkInvalid("this link is not valid") from exc
    return DecisionLink(user_id=int(data["u"]), interrupt_id=str(data["i"]))
