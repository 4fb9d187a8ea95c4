"""Who reads which approval request, through Django's full stack with real tokens: an
agent sees only what it asked (not its user's, not another agent's), keeps its own
idempotency keys, and a token without a forge role gets nowhere, long poll included."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.asgi import get_asgi_application
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from forgeui.api.longpoll import LongPolls
from forgeui.models import ApiToken
from forgeui.requests.mcp_mount import Mount
from forgeui.requests.service import NotAllowed, agent_for_token, caller_for_token

pytestmark = pytest.mark.django_db(transaction=True)


def token_for(user: User, agent: str = "") -> str:
    return ApiToken.objects.issue(user, name="tests", agent=agent)[1]


def agent_token(name: str) -> str:
    """As ``create_token --agent NAME`` makes it: a user of its own, with no role."""
    return token_for(User.objects.create_user(f"agent:{name}"), agent=name)


def ask(token: str, **fields: Any) -> Any:
    body = {"actions": [{"name": "pay", "args": {"amount": 5}}], **fields}
    return Client().post("/api/requests", body, content_type="application/json",
                         headers={"Authorization": f"Bearer {token}"})


def read(token: str, request_id: str, **params: Any) -> Any:
    return Client().get(f"/api/requests/{request_id}", params,
                        headers={"Authorization": f"Bearer {token}"})


def test_an_agent_reads_only_the_requests_it_made(users: dict[str, User]) -> None:
    first, second = agent_token("first"), agent_token("second")
    made = ask(first).json()
    assert read(first, made["id"]).status_code == 200
    refused = read(second, made["id"])
    assert refused.status_code == 404 and made["id"] in refused.json()["detail"]


def test_an_agent_token_of_a_person_does_not_read_that_persons_requests(
        users: dict[str, User]) -> None:
    reviewer = users["reviewer"]
    own = ask(token_for(reviewer)).json()
    bot = token_for(reviewer, agent="helper")
    assert read(bot, own["id"]).status_code == 404
    other_bot = ask(token_for(reviewer, agent="other")).json()
    assert read(bot, other_bot["id"]).status_code == 404
    assert read(bot, ask(bot).json()["id"]).status_code == 200


def test_each_agent_has_its_own_idempotency_keys(users: dict[str, User]) -> None:
    first, second = agent_token("first"), agent_token("second")
    made = ask(first, idempotency_key="k-1")
    again = ask(first, idempotency_key="k-1")
    assert made.status_code == 201 and again.status_code == 200
    assert again.json()["id"] == made.json()["id"]
    other = ask(second, idempotency_key="k-1")
    assert other.status_code == 201 and other.json()["id"] != made.json()["id"]
    # Agents whose tokens belong to one person, and that person, do not share keys either.
    reviewer = users["reviewer"]
    ids = {ask(token, idempotency_key="k-1").json()["id"] for token in (
        token_for(reviewer), token_for(reviewer, agent="a"), token_for(reviewer, agent="b"))}
    assert len(ids) == 3 and made.json()["id"] not in ids
    # Nor do two people, nor two users' agents of one name.
    auditor = users["auditor"]
    assert ask(token_for(auditor), idempotency_key="k-1").json()["id"] not in ids
    assert ask(token_for(auditor, agent="a"), idempotency_key="k-1").json()["id"] not in ids


SMALL_PAYMENTS = {"small": {"agents": ["billing-bot"], "approvals": 1,
                            "auto_approve": {"field": "amount", "lt": 100}}}


@override_settings(FORGE_POLICIES=SMALL_PAYMENTS)
def test_a_request_the_rule_approved_reads_decided_despite_its_deadline(
        users: dict[str, User]) -> None:
    bot = agent_token("billing-bot")
    made = ask(bot, deadline_s=30)
    assert made.status_code == 201, made.content
    found = read(bot, made.json()["id"]).json()
    assert found["status"] == "decided" and found["decisions"] == [{"type": "approve",
                                                                    "args": None,
                                                                    "message": None}]
    assert found["policy"]["decided_by"] == "policy"


def test_a_person_token_without_a_role_is_no_caller(users: dict[str, User]) -> None:
    nobody = token_for(users["nobody"])
    with pytest.raises(NotAllowed, match="no forge role"):
        caller_for_token(nobody)
    assert caller_for_token(token_for(users["auditor"])).user == users["auditor"]


def test_mcp_over_stdio_refuses_a_persons_token(users: dict[str, User],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_AGENT_TOKEN", token_for(users["reviewer"]))
    with pytest.raises(CommandError, match="person's token"):
        call_command("mcp")


def test_only_agent_tokens_act_for_mcp(users: dict[str, User]) -> None:
    for who in ("reviewer", "nobody"):
        with pytest.raises(NotAllowed, match="person's token"):
            agent_for_token(token_for(users[who]))
    with pytest.raises(NotAllowed, match="agent token"):
        agent_for_token("not-a-token")
    assert agent_for_token(agent_token("bot")).agent == "bot"


def front(method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
    """A call through the layers in front of Django (``/mcp``, long polls), as daphne
    serves them."""
    app = Mount(LongPolls(get_asgi_application()))

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            return await c.request(method, path, headers={"Authorization": f"Bearer {token}"},
                                   **kwargs)

    return async_to_sync(send)()


def long_poll(path: str, token: str) -> httpx.Response:
    return front("GET", path, token)


def test_mcp_refuses_a_persons_token(users: dict[str, User]) -> None:
    tools = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    for who in ("reviewer", "nobody"):
        refused = front("POST", "/mcp", token_for(users[who]), json=tools)
        assert refused.status_code == 403 and "agent token" in refused.json()["detail"]
    assert front("POST", "/mcp", "not-a-token", json=tools).status_code == 401


def test_a_long_poll_refuses_a_token_without_a_role(users: dict[str, User]) -> None:
    made = ask(agent_token("bot")).json()
    refused = long_poll(f"/api/requests/{made['id']}?wait=1", token_for(users["nobody"]))
    assert refused.status_code == 401 and "no forge role" in refused.json()["detail"]
    seen = long_poll(f"/api/requests/{made['id']}?wait=1", token_for(users["reviewer"]))
    assert seen.status_code == 200 and seen.json()["status"] == "pending"


def test_a_wait_that_is_not_a_number_is_a_422(users: dict[str, User]) -> None:
    bot = agent_token("bot")
    made = ask(bot).json()
    for wait in ("%C2%B2", "%D9%A3", "1.5", "-1", "61"):
        response = long_poll(f"/api/requests/{made['id']}?wait={wait}", bot)
        assert response.status_code == 422, (wait, response.text)
        assert "wait" in response.text
