"""A small client for forge's approval requests, for agents and scripts: no Django needed.

    from forgeui.client import ForgeClient
    forge = ForgeClient("https://forge.example.com", token)   # an agent token
    approval = forge.request_approval("send_email", {"to": "a@example.com"})
    if approval.allowed:
        send_email(**approval.input)             # what the reviewer approved or edited

``wait`` long-polls until a person decides, reconnecting across timeouts and server
restarts: the request is durable, so nothing is asked twice. The same call asked again
through one client (``scope``: per client unless given) finds the same request instead
of a second one; pass your own ``idempotency_key`` to choose otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

POLL_S = 55  # under the server's 60 s cap and most proxies' idle timeouts
RETRY_S = 1.0
ENDED = ("decided", "expired", "cancelled")


class ForgeError(Exception):
    """The server refused a call; ``status`` and ``detail`` say why."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Approval:
    """A person's answer to one proposed call."""

    allowed: bool
    input: dict[str, Any]  # the call's arguments, as approved or edited
    message: str = ""
    decision: dict[str, Any] = field(default_factory=dict)


class ForgeClient:
    def __init__(self, url: str, token: str | None = None, *, timeout: float = 10.0,
                 scope: str | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        token = token or os.environ.get("FORGE_AGENT_TOKEN", "")
        self.scope = scope if scope is not None else uuid.uuid4().hex
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout,
                                  transport=transport,
                                  headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ForgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create(self, actions: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        """``POST /api/requests``; the request (pending)."""
        return self._call("POST", "/api/requests", json={"actions": actions, **fields})

    def get(self, request_id: str, wait: int = 0) -> dict[str, Any]:
        """``GET /api/requests/{id}``, waiting up to ``wait`` seconds for a decision."""
        return self._call("GET", f"/api/requests/{request_id}", params={"wait": wait},
                          timeout=wait + self._http.timeout.read if wait else None)

    def wait(self, request_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Long-poll until the request is decided, expired or cancelled (or ``timeout``
        passes: then it is still pending). Lost connections are retried."""
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_S if until is None else min(POLL_S, until - time.monotonic())
            if left < 1:  # the server waits whole seconds: sleep out the rest, ask once
                time.sleep(max(0.0, left))
            try:
                found = self.get(request_id, wait=max(0, int(left)))
            except httpx.TransportError:
                found = {"status": "pending"}
                time.sleep(RETRY_S)
            if found["status"] in ENDED or (until is not None and time.monotonic() >= until):
                return found

    def request_approval(self, tool_name: str, input: dict[str, Any],
                         timeout: float | None = None, *,
                         decisions: Sequence[str] | None = None, **fields: Any) -> Approval:
        """Ask whether to run one tool call; blocks until a person decides.

        ``decisions`` limits what the reviewer is offered: a caller that cannot run
        edited arguments asks with ``("approve", "reject")``."""
        fields.setdefault("idempotency_key", call_key(tool_name, input, self.scope))
        action = {"name": tool_name, "args": input,
                  **({"decisions": list(decisions)} if decisions else {})}
        made = self.create([action], **fields)
        done = made if made["status"] in ENDED else self.wait(made["id"], timeout)
        decision = (done.get("decisions") or [{}])[0]
        kind = decision.get("type")
        message = decision.get("message") or done.get("message") or ""
        if kind in ("approve", "edit"):
            return Approval(True, decision.get("args") or input, message, decision)
        return Approval(False, input, message or f"not approved ({done['status']})", decision)

    def ask_human(self, question: str, choices: list[str] | None = None,
                  timeout: float | None = None, **fields: Any) -> str:
        """A person's answer in words ("" when none came)."""
        args = {"question": question, **({"choices": choices} if choices else {})}
        fields.setdefault("idempotency_key", call_key("ask_human", args, self.scope))
        made = self.create([{"name": "ask_human", "args": args, "decisions": ["respond"]}],
                           title=question, **fields)
        done = made if made["status"] in ENDED else self.wait(made["id"], timeout)
        return str(((done.get("decisions") or [{}])[0]).get("message") or "")

    def _call(self, method: str, path: str, timeout: float | None = None,
              **kwargs: Any) -> dict[str, Any]:
        extra = {} if timeout is None else {"timeout": timeout}
        response = self._http.request(method, path, **kwargs, **extra)
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text
            raise ForgeError(response.status_code, detail)
        found: dict[str, Any] = response.json()
        return found


def call_key(name: str, args: Any, scope: str = "") -> str:
    """A stable key for one call: asking again about the same call finds the same request."""
    text = json.dumps([scope, name, args], sort_keys=True, separators=(",", ":"), default=str)
    return "call-" + hashlib.sha256(text.encode()).hexdigest()[:40]
