"""The Slack settings, and the Web API client they describe."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from slack_sdk import WebClient

DEFAULT_API_URL = "https://slack.com/api/"
TIMEOUT_S = 5


def token() -> str:
    return str(getattr(settings, "FORGE_SLACK_BOT_TOKEN", "") or "")


def signing_secret() -> str:
    return str(getattr(settings, "FORGE_SLACK_SIGNING_SECRET", "") or "")


def channel() -> str:
    return str(getattr(settings, "FORGE_SLACK_CHANNEL", "") or "")


def api_url() -> str:
    url = str(getattr(settings, "FORGE_SLACK_API_URL", "") or DEFAULT_API_URL)
    return url if url.endswith("/") else url + "/"


def posting() -> bool:
    """Messages are posted once there is a bot token and a channel to post in."""
    return bool(token() and (channel() or getattr(settings, "FORGE_SLACK_CHANNELS", None)))


def answering() -> bool:
    """Presses are taken once requests can be verified and answered back."""
    return bool(token() and signing_secret())


def backoff() -> list[float]:
    """Seconds to wait before each retry of one Web API call; its length is the number
    of retries (the periodic resync tries again after that)."""
    return list(getattr(settings, "FORGE_SLACK_BACKOFF", [1, 4, 16]))


def link_by_email() -> bool:
    """Whether a Slack user whose e-mail (verified by Slack) is one forge user's may act
    as that user without linking first."""
    return bool(getattr(settings, "FORGE_SLACK_LINK_BY_EMAIL", False))


def client() -> WebClient:
    """A Web API client; retries are ``delivery``'s, so the SDK's own are off."""
    # Imported when first used: the SDK costs every process's start a tenth of a second,
    # and most (workers, commands) never talk to Slack.
    from slack_sdk import WebClient

    return WebClient(token=token(), base_url=api_url(), timeout=TIMEOUT_S, retry_handlers=[])


def page_url(path: str) -> str:
    return f"{settings.FORGE_BASE_URL}{path}"
