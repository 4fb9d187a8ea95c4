"""``forgeui.client`` against forge in this process (httpx's WSGI transport on Django's
full stack): a caller that cannot run edited arguments offers approve or reject only."""

from __future__ import annotations

from io import StringIO

import httpx
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application

from forgeui.client import ForgeClient
from tests.forgeui.apiclient import Api

CALL = ("send_email", {"to": "agent@example.com", "body": "the report"})


def agent_client() -> ForgeClient:
    out = StringIO()
    call_command("create_token", "--agent", "bot", stdout=out)
    return ForgeClient("http://testserver", out.getvalue().strip(),
                       transport=httpx.WSGITransport(app=get_wsgi_application()))


def test_request_approval_may_offer_approve_or_reject_only(users: dict[str, User]) -> None:
    api = Api(users)
    with agent_client() as forge:
        asked = forge.request_approval(*CALL, timeout=0, decisions=("approve", "reject"))
        assert not asked.allowed  # no one has decided yet
        [row] = api.pending()
        path = f"/api/requests/{row['request_id']}/decision"
        edit = {"type": "edit", "args": {"to": "dana@example.com", "body": "the report"}}
        refused = api.post("reviewer", path, {"decisions": [edit]})
        assert refused.status_code == 422, refused.content
        assert api.post("reviewer", path, {"decisions": [{"type": "approve"}]}
                        ).status_code == 200
        again = forge.request_approval(*CALL, timeout=0, decisions=("approve", "reject"))
    assert again.allowed and again.input == CALL[1]
