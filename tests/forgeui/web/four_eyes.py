"""Pages read as the people of a two-approval policy of finance (the ``paused`` signoff of
this folder's conftest)."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

POLICY = {"payments": {"nodes": ["signoff/sign"], "approvals": 2, "groups": ["finance"]}}


def as_user(name: str) -> Client:
    client = Client()
    client.force_login(User.objects.get(username=name))
    return client


def text(response: Any) -> str:
    return re.sub(r"\s+", " ", response.content.decode())
