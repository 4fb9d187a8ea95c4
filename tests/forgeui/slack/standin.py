"""A local stand-in for Slack's Web API: records each call and its arguments.

Slack cannot be reached from the test machines; ``slack_sdk.WebClient`` reaches this
server through its ``base_url`` (``FORGE_SLACK_API_URL``). It answers like Slack:
``chat.postMessage`` with a new ``ts``, ``users.info`` with the profiles it was given.
Also used by ``bench/slack_bench.py``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.processes import serve_in_background


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class SlackStandIn:
    """``with SlackStandIn() as slack:`` a Web API on 127.0.0.1; ``slack.url`` is its base."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.emails: dict[str, str] = {}  # Slack user id -> the e-mail users.info tells
        self.lock = threading.Lock()
        self._ts = itertools.count(1)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def __enter__(self) -> SlackStandIn:
        serve_in_background(self.server)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls.append(Call(method, args))
        if method == "chat.postMessage":
            return {"ok": True, "channel": args.get("channel"),
                    "ts": f"{1700000000 + next(self._ts)}.000100"}
        if method == "chat.update":
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "users.info":
            email = self.emails.get(str(args.get("user")), "")
            return {"ok": True, "user": {"id": args.get("user"), "profile": {"email": email}}}
        return {"ok": True}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.reply(dict(parse_qsl(urlsplit(self.path).query)))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    args = json.loads(raw or "{}")
                else:
                    args = dict(parse_qsl(raw))
                self.reply({**dict(parse_qsl(urlsplit(self.path).query)), **args})

            def reply(self, args: dict[str, Any]) -> None:
                method = urlsplit(self.path).path.rsplit("/", 1)[-1]
                for key in ("blocks", "view"):  # form-encoded calls send these as JSON text
                    if isinstance(args.get(key), str):
                        args[key] = json.loads(args[key])
                body = json.dumps(standin.answer(method, args)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


def buttons(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The buttons of a message's blocks, by action id."""
    return {e["action_id"]: e for b in blocks if b.get("type") == "actions"
            for e in b["elements"]}


def text_of(blocks: list[dict[str, Any]]) -> str:
    """All the text of a message's blocks, one line per element."""
    found: list[str] = []
    for block in blocks:
        if isinstance(block.get("text"), dict):
            found.append(block["text"]["text"])
        found += [e["text"] for e in block.get("elements", []) if isinstance(e.get("text"), str)]
    return "\n".join(found)


def signed_body(secret: str, payload: dict[str, Any], at: float | None = None
                ) -> tuple[str, dict[str, str]]:
    """An interactivity request as Slack sends it: a form with ``payload``, signed
    ``v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}")``."""
    body = urlencode({"payload": json.dumps(payload)})
    timestamp = str(int(at if at is not None else time.time()))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return body, {"X-Slack-Request-Timestamp": timestamp,
                  "X-Slack-Signature": f"v0={digest.hexdigest()}"}


def press_payload(button: dict[str, Any], slack_user: str, channel: str, ts: str,
                  team: str = "T1") -> dict[str, Any]:
    """A ``block_actions`` payload for one press of ``button`` on message ``ts``."""
    return {"type": "block_actions", "user": {"id": slack_user, "team_id": team},
            "team": {"id": team}, "trigger_id": f"trigger-{time.monotonic_ns()}",
            "container": {"type": "message", "message_ts": ts, "channel_id": channel},
            "channel": {"id": channel}, "response_url": "https://hooks.slack.invalid/x",
            "actions": [{"type": "button", "action_id": button["action_id"],
                         "block_id": "forge", "value": button["value"]}]}


def submission(view: dict[str, Any], slack_user: str, values: dict[str, str],
               team: str = "T1") -> dict[str, Any]:
    """A ``view_submission`` payload: the form ``view`` (as views.open got it), filled in."""
    return {"type": "view_submission", "user": {"id": slack_user, "team_id": team},
            "team": {"id": team},
            "view": {"callback_id": view["callback_id"],
                     "private_metadata": view["private_metadata"],
                     "state": {"values": {block: {"value": {"type": "plain_text_input",
                                                            "value": value}}
                                          for block, value in values.items()}}}}
