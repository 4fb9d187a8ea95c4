"""Approval requests over HTTP: httpx against a live daphne (the embedded settings).

Each test is an agent or a reviewer as they would be: a bearer token over the network, no
Django test client. The server is shared by the module; each test makes its own requests.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from forgeui.client import ForgeClient
from tests.e2e.conftest import Seed
from tests.forgeui.requests.live import Forge, ask, forge
from tests.processes import manage, serve_in_background

pytestmark = pytest.mark.slow
DIFF_ARGS = {"path": "notes.txt", "old": "hello\n", "new": "hello world\n"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, agents_seeded: Seed) -> Iterator[Forge]:
    with forge(tmp_path_factory.mktemp("requests"), agents_seeded, FORGE_SWEEP_SECONDS="0.3",
               FORGE_REQUESTS_APPROVE_ON_DEADLINE="trusted") as server:
        yield server


def call(live: Forge, method: str, path: str, who: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, live.url + path, headers=live.headers(who), timeout=30,
                         **kwargs)


def decide(live: Forge, request_id: str, decisions: list[dict[str, Any]],
           who: str = "reviewer", **extra: Any) -> httpx.Response:
    return call(live, "POST", f"/api/requests/{request_id}/decision", who,
                json={"decisions": decisions, **extra})


def test_a_request_is_an_inbox_row_with_its_request_id(live: Forge) -> None:
    made = ask(live, title="Send the report?", agent={"name": "mailer", "session": "s-42"})
    assert made["status"] == "pending" and made["agent"] == {"name": "mailer",
                                                             "session": "s-42"}
    pending = call(live, "GET", "/api/interrupts?status=pending&limit=200", "reviewer").json()
    rows = [item for item in pending["items"] if item.get("request_id") == made["id"]]
    assert len(rows) == 1 and rows[0]["payload"]["title"] == "Send the report?"
    assert rows[0]["id"] == made["interrupt_id"]


def test_the_same_idempotency_key_from_one_agent_is_one_request(live: Forge) -> None:
    first = ask(live, idempotency_key="same-call")
    again = call(live, "POST", "/api/requests", "bot", json={
        "actions": [{"name": "send_email", "args": {}}], "idempotency_key": "same-call"})
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    # Another agent's key is its own.
    other = ask(live, who="other", idempotency_key="same-call")
    assert other["id"] != first["id"]


def test_a_client_that_times_out_and_calls_again_leaves_one_row(live: Forge) -> None:
    with ForgeClient(live.url, live.tokens["bot"]) as client:
        made = client.create([{"name": "rm", "args": {"path": "/tmp/x"}}],
                             idempotency_key="rm-1")
        with pytest.raises(httpx.ReadTimeout):  # the agent gives up before the server does
            httpx.get(f"{live.url}/api/requests/{made['id']}", params={"wait": 5},
                      headers=live.headers("bot"), timeout=0.5)
        again = client.create([{"name": "rm", "args": {"path": "/tmp/x"}}],
                              idempotency_key="rm-1")
    assert again["id"] == made["id"]
    rows = call(live, "GET", "/api/interrupts?status=pending&limit=200", "reviewer").json()
    assert sum(item.get("request_id") == made["id"] for item in rows["items"]) == 1


def test_a_long_poll_returns_the_decision_as_it_is_made(live: Forge) -> None:
    made = ask(live)
    seen: dict[str, Any] = {}

    def wait() -> None:
        started = time.monotonic()
        seen["found"] = call(live, "GET", f"/api/requests/{made['id']}?wait=30", "bot").json()
        seen["took"] = time.monotonic() - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)  # the poll is held by now: it is what is being tested
    decided_at = time.monotonic()
    assert decide(live, made["id"], [{"type": "approve"}], message="go").status_code == 200
    waiter.join(30)
    found = seen["found"]
    assert found["status"] == "decided" and found["decisions"][0]["type"] == "approve"
    assert found["responder"]["username"] == "reviewer" and found["message"] == "go"
    assert found["responded_at"]
    assert seen["took"] < 20 and time.monotonic() - decided_at < 10


def test_a_long_poll_waits_through_changes_that_decide_nothing(live: Forge) -> None:
    made = ask(live)
    seen: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: seen.update(call(
        live, "GET", f"/api/requests/{made['id']}?wait=30", "bot").json()))
    waiter.start()
    time.sleep(0.5)  # the poll is held by now
    # A claim changes the request's row in the inbox (an event on its thread), not its answer.
    claimed = call(live, "POST", f"/api/interrupts/{made['interrupt_id']}/claim", "reviewer")
    assert claimed.status_code == 200, claimed.text
    waiter.join(2)
    assert waiter.is_alive(), f"the poll answered before anything was decided: {seen}"
    assert decide(live, made["id"], [{"type": "reject"}]).status_code == 200
    waiter.join(30)
    assert seen["status"] == "decided" and seen["decisions"][0]["type"] == "reject"


class CountingTransport(httpx.HTTPTransport):
    """The client's own transport, counting the requests it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        return super().handle_request(request)


def test_the_client_waits_to_its_timeout_without_asking_back_to_back(live: Forge) -> None:
    counting = CountingTransport()
    with ForgeClient(live.url, live.tokens["bot"], transport=counting) as client:
        made = client.create([{"name": "send_email", "args": {}}])
        started = time.monotonic()
        found = client.wait(made["id"], timeout=1.5)
        took = time.monotonic() - started
    assert found["status"] == "pending" and 1.4 <= took < 10
    # The create, a one-second poll, and one read once the last half second is out.
    assert counting.sent <= 4, f"{counting.sent} requests in {took:.1f} s"


def test_a_pending_long_poll_answers_pending_at_its_timeout(live: Forge) -> None:
    made = ask(live)
    started = time.monotonic()
    found = call(live, "GET", f"/api/requests/{made['id']}?wait=1", "bot").json()
    assert found["status"] == "pending" and 0.9 <= time.monotonic() - started < 10


def test_two_reviewers_deciding_at_once_one_wins(live: Forge) -> None:
    made = ask(live)
    results: dict[str, httpx.Response] = {}
    gate = threading.Barrier(2)

    def decide_as(who: str, kind: str) -> None:
        gate.wait()
        results[who] = decide(live, made["id"], [{"type": kind}], who=who)

    threads = [threading.Thread(target=decide_as, args=("reviewer", "approve")),
               threading.Thread(target=decide_as, args=("supervisor", "reject"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    codes = sorted(r.status_code for r in results.values())
    assert codes == [200, 409], {k: r.text for k, r in results.items()}
    winner = next(who for who, r in results.items() if r.status_code == 200)
    loser = next(r for r in results.values() if r.status_code == 409).json()
    assert loser["answered_by"] == winner and loser["answered_at"]
    final = call(live, "GET", f"/api/requests/{made['id']}", "bot").json()
    assert final["responder"]["username"] == winner


def test_an_agent_token_may_not_answer_nor_read_the_inbox(live: Forge) -> None:
    made = ask(live)
    refused = decide(live, made["id"], [{"type": "approve"}], who="bot")
    assert refused.status_code == 403 and "agent token" in refused.json()["detail"]
    assert call(live, "GET", "/api/interrupts", "bot").status_code == 403
    resume = call(live, "POST", f"/api/interrupts/{made['interrupt_id']}/resume", "bot",
                  json={"value": {"decisions": [{"type": "approve"}]}})
    assert resume.status_code == 403
    assert call(live, "GET", f"/api/requests/{made['id']}", "bot").json()["status"] == "pending"


def test_an_agent_reads_its_own_requests_only(live: Forge) -> None:
    made = ask(live)
    assert call(live, "GET", f"/api/requests/{made['id']}", "other").status_code == 404
    assert call(live, "GET", f"/api/requests/{made['id']}", "auditor").status_code == 200


def test_edited_args_are_checked_against_the_actions_schema(live: Forge) -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string", "format": "email"},
                                               "cc": {"type": "integer"}},
              "required": ["to"], "additionalProperties": False}
    made = ask(live, actions=[
        {"name": "send_email", "args": {"to": "a@example.com"}, "args_schema": schema},
        {"name": "archive", "args": {}, "decisions": ["approve", "reject"]}])
    bad = decide(live, made["id"], [{"type": "edit", "args": {"cc": "x"}},
                                    {"type": "edit", "args": {}}])
    assert bad.status_code == 422
    locs = [e["loc"] for e in bad.json()["detail"]]
    assert ["body", "decisions", 0, "args", "cc"] in locs
    assert ["body", "decisions", 0, "args"] in locs  # "to" is required
    assert ["body", "decisions", 1, "type"] in locs  # archive offers no edit
    good = decide(live, made["id"], [{"type": "edit", "args": {"to": "b@example.com"}},
                                     {"type": "reject", "message": "keep it"}])
    assert good.status_code == 200, good.text
    assert good.json()["decisions"][0]["args"] == {"to": "b@example.com"}


@pytest.mark.parametrize(("body", "field"), [
    ({"actions": [{"name": "x", "args": {}, "decisions": ["approve", "maybe"]}]},
     "decisions"),
    ({"actions": [{"name": "x", "args": {}, "args_schema": {"type": "nonsense"}}]},
     "args_schema"),
    ({"actions": []}, "actions"),
    ({"actions": [{"name": "x", "args": {}}], "callback_url": "http://127.0.0.1:9/hook"},
     "callback_url"),
    ({"actions": [{"name": "x", "args": {}}], "callback_url": "http://10.1.2.3/hook"},
     "callback_url"),
    ({"actions": [{"name": "x", "args": {}}], "deadline_s": 5, "on_deadline": "approve"},
     "on_deadline"),
])
def test_bad_requests_are_refused_with_the_field(live: Forge, body: dict[str, Any],
                                                 field: str) -> None:
    response = call(live, "POST", "/api/requests", "bot", json=body)
    assert response.status_code == 422, response.text
    assert any(field in map(str, e["loc"]) for e in response.json()["detail"]), response.text


def test_a_body_over_a_megabyte_is_refused(live: Forge) -> None:
    big = {"actions": [{"name": "x", "args": {"blob": "a" * (1024 * 1024)}}]}
    response = call(live, "POST", "/api/requests", "bot", json=big)
    assert response.status_code == 413


def test_a_request_expires_to_its_default(live: Forge) -> None:
    made = ask(live, deadline_s=0.5)
    found = call(live, "GET", f"/api/requests/{made['id']}?wait=20", "bot").json()
    assert found["status"] == "expired" and found["responder"] is None
    assert [d["type"] for d in found["decisions"]] == ["reject"]


def test_approve_on_deadline_only_for_an_allowed_agent(live: Forge) -> None:
    token = manage("create_token", "--agent", "trusted", env=live.env).stdout.strip()
    body = {"actions": [{"name": "x", "args": {}}], "deadline_s": 0.5, "on_deadline": "approve"}
    made = httpx.post(live.url + "/api/requests", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {token}"})
    assert made.status_code == 201, made.text
    found = httpx.get(f"{live.url}/api/requests/{made.json()['id']}", params={"wait": 20},
                      headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
    assert found["status"] == "expired" and found["decisions"][0]["type"] == "approve"


def test_the_client_asks_and_gets_an_edited_call(live: Forge) -> None:
    seen: dict[str, Any] = {}
    with ForgeClient(live.url, live.tokens["bot"]) as client:
        asker = threading.Thread(target=lambda: seen.update(
            approval=client.request_approval("write_file", DIFF_ARGS, timeout=30)))
        asker.start()
        request_id = wait_for_request(live, "write_file")
        edited = {**DIFF_ARGS, "new": "hello there\n"}
        assert decide(live, request_id, [{"type": "edit", "args": edited}]).status_code == 200
        asker.join(30)
    assert seen["approval"].allowed and seen["approval"].input == edited


def wait_for_request(live: Forge, action: str) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for item in call(live, "GET", "/api/interrupts?status=pending&limit=200",
                         "reviewer").json()["items"]:
            calls = (item["payload"] or {}).get("calls") or [{}]
            if item.get("request_id") and calls[0].get("name") == action:
                return str(item["request_id"])
        time.sleep(0.1)
    raise AssertionError(f"no request for {action}")


@pytest.fixture(scope="module")
def inside(tmp_path_factory: pytest.TempPathFactory, agents_seeded: Seed) -> Iterator[Forge]:
    """A forge that may call back to this machine (a receiver inside the network)."""
    with forge(tmp_path_factory.mktemp("inside"), agents_seeded,
               FORGE_WEBHOOK_ALLOW_PRIVATE="1", FORGE_SWEEP_SECONDS="0.3") as server:
        yield server


def test_polls_are_woken_after_the_poll_that_started_the_listener_ended(
        inside: Forge) -> None:
    # The first poll on a fresh server starts the process's listener; once that poll has
    # its answer, the other waiters must still be woken, not left to their timeout.
    made = [ask(inside) for _ in range(3)]
    seen: dict[str, float] = {}

    def wait(request_id: str) -> None:
        call(inside, "GET", f"/api/requests/{request_id}?wait=40", "bot")
        seen[request_id] = time.monotonic()

    waiters = []
    for request in made:  # the first poll is the one that starts the listener
        waiters.append(threading.Thread(target=wait, args=(request["id"],)))
        waiters[-1].start()
        time.sleep(0.5)
    decided: dict[str, float] = {}
    for request in made:
        assert decide(inside, request["id"], [{"type": "approve"}]).status_code == 200
        decided[request["id"]] = time.monotonic()
        time.sleep(0.5)
    for waiter in waiters:
        waiter.join(60)
    assert all(seen[k] - decided[k] < 15 for k in decided), (seen, decided)


def test_a_callback_is_posted_once_signed_when_the_request_is_decided(inside: Forge) -> None:
    received: list[tuple[dict[str, str], bytes]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append((dict(self.headers), self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Receiver) as receiver:
        serve_in_background(receiver)
        hook = f"http://127.0.0.1:{receiver.server_address[1]}/done"
        made = ask(inside, callback_url=hook)
        assert made["callback_secret"]
        assert decide(inside, made["id"], [{"type": "reject", "message": "no"}]).status_code \
            == 200
        deadline = time.monotonic() + 30
        while not received and time.monotonic() < deadline:
            time.sleep(0.1)
        receiver.shutdown()
    headers, raw = received[0]
    expected = "sha256=" + hmac.new(made["callback_secret"].encode(), raw,
                                    hashlib.sha256).hexdigest()
    assert headers["X-Forge-Signature"] == expected
    sent = json.loads(raw)
    assert sent["event"] == "request.decided" and sent["request_id"] == made["id"]
    assert sent["decisions"] == [{"type": "reject", "message": "no"}]
    assert sent["responder"] == "reviewer" and len(received) == 1


def test_agents_waiting_across_a_server_restart_get_their_decision(inside: Forge) -> None:
    server = inside
    made = [ask(server) for _ in range(3)]
    seen: dict[str, dict[str, Any]] = {}

    def wait(request_id: str) -> None:
        with ForgeClient(server.url, server.tokens["bot"]) as client:
            seen[request_id] = client.wait(request_id, timeout=90)

    waiters = [threading.Thread(target=wait, args=(m["id"],)) for m in made]
    for waiter in waiters:
        waiter.start()
    time.sleep(1)  # the long polls are held when the server goes down
    server.stop()
    server.start()
    for request in made:
        assert decide(server, request["id"], [{"type": "approve"}]).status_code == 200
    for waiter in waiters:
        waiter.join(90)
    assert {k: v["status"] for k, v in seen.items()} == {m["id"]: "decided" for m in made}
