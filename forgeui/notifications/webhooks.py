"""Outgoing webhooks: one delivery sent, with its retries (``fanout`` makes deliveries).

Each request carries ``X-Forge-Event``, ``X-Forge-Delivery`` and ``X-Forge-Signature:
sha256=<hex>``, an HMAC-SHA256 of the exact body bytes under the webhook's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from forgeui.models import (
    DeliveryStatus,
    WebhookDelivery,
)
from forgeui.notifications import egress

logger = logging.getLogger(__name__)

TIMEOUT_S = 5.0
SIGNATURE_HEADER = "X-Forge-Signature"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff() -> list[float]:
    """Seconds to wait before each retry; its length is the number of retries."""
    return list(getattr(settings, "FORGE_WEBHOOK_BACKOFF", [1, 4, 16]))


def deliver(delivery_id: int, sleep: Callable[[float], None] = time.sleep) -> str:
    """POST one delivery, retrying with backoff; every attempt is counted on its row."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status != DeliveryStatus.PENDING:
        return str(delivery.status)
    body = json.dumps(delivery.body, separators=(",", ":"), sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "forge-webhooks/1",
               "X-Forge-Event": delivery.event, "X-Forge-Delivery": str(delivery.pk),
               SIGNATURE_HEADER: sign(delivery.webhook.secret, body)}
    waits = backoff()
    for attempt in range(delivery.attempts + 1, len(waits) + 2):
        code, error = post(delivery.webhook.url, body, headers)
        done = code is not None and 200 <= code < 300
        status = (DeliveryStatus.DELIVERED if done else DeliveryStatus.FAILED
                  if attempt > len(waits) else DeliveryStatus.PENDING)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            attempts=attempt, response_code=code, last_error=error, status=status,
            delivered_at=timezone.now() if done else None)
        if status != DeliveryStatus.PENDING:
            return str(status)
        sleep(waits[attempt - 1])
    return DeliveryStatus.FAILED


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str]:
    """(status code or None, error text); never raises. Private destinations and
    redirects are refused (``forgeui.notifications.egress``)."""
    try:
        code = egress.post(url, body, headers, TIMEOUT_S,
                           allow_private=settings.FORGE_WEBHOOK_ALLOW_PRIVATE)
    except egress.RefusedDestination as exc:
        return None, f"refused: {exc}"[:1000]
    except Exception as exc:  # refused, timed out, bad URL: all the receiver's problem
        return None, f"{type(exc).__name__}: {exc}"[:1000]
    if 300 <= code < 400:
        return code, f"HTTP {code}: redirects are not followed"
    return code, "" if 200 <= code < 300 else f"HTTP {code}"
