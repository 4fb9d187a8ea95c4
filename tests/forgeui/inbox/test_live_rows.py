"""A row pushed over the websocket goes into the inbox table bare, never wrapped in the
``<tbody>`` it travels in (a nested body pushes the table's columns off the screen)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.inbox.rows import oob_upsert

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_rows_body_takes_pushed_rows_without_their_wrapper(users: dict[str, User]) -> None:
    client = Client()
    client.force_login(users["reviewer"])
    html = client.get("/").content.decode()
    body = re.search(r'<tbody id="inbox-rows"[^>]*>', html)
    assert body is not None
    # The page's morph extension counts every swap style as inline (the whole element
    # goes in); the rows' body opts out, so a beforeend/afterbegin swap inserts children.
    assert 'hx-ext="ignore:morph"' in body.group(0)
    pushed = oob_upsert('<tr id="int-1"><td>x</td></tr>', "1", "beforeend")
    assert 'hx-swap-oob="beforeend:#inbox-rows"' in pushed and pushed.count("<tbody") == 1
