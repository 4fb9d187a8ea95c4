"""Bidirectional-override characters in payloads are shown as visible markers on every
page and in pushed rows; the stored payload keeps them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from forgeui.inbox import bidi
from forgeui.inbox.rows import render_rows
from forgeui.models import Interrupt
from forgeui.runs import services

pytestmark = pytest.mark.django_db(transaction=True)

TRICK = "Pay \u202e$01 OT\u202c to ACME \u2066x\u2069"


def test_mark_names_each_control() -> None:
    assert bidi.mark(TRICK) == "Pay ⟦U+202E⟧$01 OT⟦U+202C⟧ to ACME ⟦U+2066⟧x⟦U+2069⟧"
    assert bidi.mark("plain עברית text") == "plain עברית text"  # RTL letters are fine


def test_pages_and_pushed_rows_show_the_markers(users: dict[str, User]) -> None:
    started = services.start_run(users["supervisor"], "custom",
                                 {"question": TRICK, "payload": {"memo": TRICK}})
    interrupt = Interrupt.objects.of_tree(started.thread_id).pending().get()
    assert interrupt.payload["question"] == TRICK  # stored as it came
    client = Client()
    client.force_login(users["reviewer"])
    for path in ("/", f"/interrupts/{interrupt.pk}/", f"/runs/{interrupt.run_id}/",
                 f"/threads/{interrupt.root_thread_id}/", "/runs/"):
        page = client.get(path).content.decode()
        assert not bidi.CONTROLS.search(page), path
    assert "⟦U+202E⟧" in client.get(f"/interrupts/{interrupt.pk}/").content.decode()
    for row in render_rows(interrupt).values():
        assert "⟦U+202E⟧" in row and not bidi.CONTROLS.search(row)
