"""Markup that people and graphs supply (answers, steering notes, usernames, schema
titles) is escaped on every page that shows it: it never reaches the browser as markup."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from forgeui.models import Interrupt
from forgeui.runs import services

pytestmark = pytest.mark.django_db(transaction=True)

MARK = '<em id="pwn">'
RAW = "<em id="  # as markup, however quoted (JSON shows it as <em id=\"pwn\">)
ESCAPED = "&lt;em id="


def paused(users: dict[str, User], payload: dict[str, object]) -> Interrupt:
    started = services.start_run(users["supervisor"], "custom", {"payload": payload})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()


@pytest.fixture
def marked(users: dict[str, User]) -> dict[str, Interrupt]:
    """An answer, a note and a username holding markup; a pending schema with it."""
    eve = User.objects.create_user(f"{MARK}eve", password="eve-password")
    eve.groups.add(Group.objects.get(name="reviewer"))
    answered = paused(users, {})
    services.answer_interrupt(eve, answered.pk, {"text": MARK}, steering=f"note {MARK}")
    schema = {"type": "object", "properties": {"reason": {"type": "string", "title": MARK,
                                                          "description": MARK}}}
    pending = paused(users, {"answer_schema": schema})
    services.add_steering_note(eve, pending.run_id, f"steer {MARK}")
    return {"answered": answered, "pending": pending, "eve": eve}  # type: ignore[dict-item]


def pages(marked: dict[str, Interrupt]) -> list[str]:
    answered, pending = marked["answered"], marked["pending"]
    return ["/", "/?tab=done", "/runs/", "/audit/", "/audit/decisions/",
            f"/interrupts/{answered.pk}/", f"/interrupts/{pending.pk}/",
            f"/runs/{answered.run_id}/", f"/runs/{pending.run_id}/",
            f"/threads/{answered.root_thread_id}/", f"/threads/{pending.root_thread_id}/"]


@pytest.mark.parametrize("who", ["eve", "supervisor", "auditor"])
def test_no_page_sends_the_markup_as_markup(users: dict[str, User],
                                            marked: dict[str, Interrupt], who: str) -> None:
    client = Client()
    client.force_login(marked["eve"] if who == "eve" else users[who])  # type: ignore[arg-type]
    for path in pages(marked):
        response = client.get(path)
        assert response.status_code == 200, path
        assert RAW not in response.content.decode(), path


def test_the_markup_is_shown_escaped_where_it_belongs(users: dict[str, User],
                                                      marked: dict[str, Interrupt]) -> None:
    """The check above means something only if the pages show these values at all."""
    client = Client()
    client.force_login(users["supervisor"])
    answered, pending = marked["answered"], marked["pending"]
    shown = {path: client.get(path).content.decode().count(ESCAPED) for path in (
        f"/interrupts/{answered.pk}/", f"/threads/{answered.root_thread_id}/", "/audit/",
        f"/interrupts/{pending.pk}/", "/audit/decisions/")}
    # answer, note and who answered; the same on the timeline; the schema's title.
    assert shown[f"/interrupts/{answered.pk}/"] >= 3, shown
    assert shown[f"/threads/{answered.root_thread_id}/"] >= 2, shown
    assert shown[f"/interrupts/{pending.pk}/"] >= 1, shown
    assert shown["/audit/"] >= 1 and shown["/audit/decisions/"] >= 1, shown
