"""A test client per user for the JSON API, each with a real bearer token.

Requests go through Django's full stack (middleware, ninja, services, the immediate task
backend, the real executor and the ORM store): nothing of ours is mocked.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from forgeui.models import ApiToken


class Api:
    """``api.get("reviewer", "/api/runs")``: call the API as one of the test users."""

    def __init__(self, users: dict[str, User]) -> None:
        self.users = dict(users)
        self.users["admin"] = User.objects.create_superuser("admin", password="admin")
        self.tokens = {name: ApiToken.objects.issue(user, name="tests")[1]
                       for name, user in self.users.items()}

    def client(self, who: str) -> Client:
        return Client(headers={"Authorization": f"Bearer {self.tokens[who]}"})

    def get(self, who: str, path: str, **params: Any) -> Any:
        return self.client(who).get(path, params)

    def post(self, who: str, path: str, body: Any = None, raw: bytes | str | None = None,
             **headers: str) -> Any:
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client(who).post(path, data, content_type="application/json",
                                     headers=headers)

    # -- fixtures made through the API itself ------------------------------------------

    def start(self, graph: str, input: Any = None, who: str = "supervisor") -> dict[str, Any]:
        """Start a run (tasks run on commit here, so it has paused by the time we return)."""
        response = self.post(who, "/api/runs", {"graph": graph, "input": input})
        assert response.status_code == 201, response.content
        return response.json()

    def pending(self, **filters: Any) -> list[dict[str, Any]]:
        response = self.get("auditor", "/api/interrupts", status="pending", **filters)
        assert response.status_code == 200, response.content
        return response.json()["items"]

    def pending_of(self, started: dict[str, Any]) -> list[dict[str, Any]]:
        return self.pending(root_thread_id=started["thread_id"])


def errors_at(response: Any) -> list[list[str | int]]:
    """The ``loc`` of every field error in a 422 body."""
    return [error["loc"] for error in response.json()["detail"]]
