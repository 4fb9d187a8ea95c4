"""An agent's request page: the Context card says who asks, where the decision goes and
until when, instead of the request's raw input and its internal answer schema."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from forgeui.models import Interrupt
from forgeui.requests import service

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"agent": {"name": "ops-bot", "session": "s-42"},
        "actions": [{"name": "deploy", "args": {"version": "2.4.0"}},
                    {"name": "notify", "args": {"channel": "#ops"}}],
        "deadline_s": 600, "callback_url": "http://127.0.0.1:9/hook"}


def context_card(html: str) -> str:
    cards = re.findall(r'<section class="card context".*?</section>', html, flags=re.S)
    assert cards
    return cards[-1]


@override_settings(FORGE_WEBHOOK_ALLOW_PRIVATE=True)
def test_the_context_card_of_a_request_says_what_a_reviewer_needs(
        users: dict[str, User]) -> None:
    made = service.create(service.Caller(users["supervisor"], agent="ops-bot"), BODY)
    interrupt = Interrupt.objects.get(root_thread_id=made.row.id)
    client = Client()
    client.force_login(users["reviewer"])
    card = context_card(client.get(f"/interrupts/{interrupt.pk}/").content.decode())
    assert "ops-bot" in card and "s-42" in card and "127.0.0.1:9" in card
    assert "Deadline" in card and "; then every call rejected" in card
    assert "answer_schema" not in card and "Run input" not in card
    assert card.count("2.4.0") == 0  # the calls are on the page once, in the question card
