"""``/slack/events``: Slack's interactivity requests, verified, acknowledged at once.

Slack signs each request (``X-Slack-Signature``: HMAC-SHA256 of ``v0:{timestamp}:{body}``
under the signing secret) and wants a 200 within three seconds: a request whose
signature does not match, or whose timestamp is more than five minutes off (a replay),
is refused with 401; a button press is queued and acknowledged; a form is checked here
so its errors can go back to it, then queued.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_sdk.signature import SignatureVerifier

from forgeui.slack import acting, config
from forgeui.slack.tasks import press_task, submit_task


@csrf_exempt
@require_POST
def events(request: HttpRequest) -> HttpResponse:
    if not config.answering():
        return JsonResponse({"error": "Slack is not configured here: set "
                                      "FORGE_SLACK_BOT_TOKEN and FORGE_SLACK_SIGNING_SECRET"},
                            status=404)
    if not verified(request):
        return JsonResponse({"error": "the Slack signature does not match, or its timestamp "
                                      "is more than five minutes off"}, status=401)
    payload = read(request)
    if payload is None:
        return JsonResponse({"error": "expected a form field 'payload' holding a JSON "
                                      "object, or a JSON body"}, status=400)
    kind = payload.get("type")
    if kind == "url_verification":
        return JsonResponse({"challenge": str(payload.get("challenge", ""))})
    if kind == "block_actions":
        press_task.enqueue(payload)
    elif kind == "view_submission":
        if errors := acting.form_errors(payload):
            return JsonResponse({"response_action": "errors", "errors": errors})
        submit_task.enqueue(payload)
    return HttpResponse(status=200)


def verified(request: HttpRequest) -> bool:
    """Slack's signature over the raw body, and a timestamp within five minutes."""
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    if not timestamp.isascii() or not timestamp.isdigit():
        return False
    try:
        return SignatureVerifier(config.signing_secret()).is_valid(
            body=request.body, timestamp=timestamp,
            signature=request.headers.get("X-Slack-Signature", ""))
    except ValueError:  # a body that is not UTF-8 was not signed by Slack
        return False


def read(request: HttpRequest) -> dict[str, Any] | None:
    """The payload: a form's ``payload`` field (interactivity) or a JSON body (events)."""
    try:
        if request.content_type == "application/json":
            found = json.loads(request.body)
        else:
            form = parse_qs(request.body.decode(), keep_blank_values=True)
            found = json.loads(form.get("payload", [""])[0])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
