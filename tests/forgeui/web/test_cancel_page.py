"""Cancelling a sub-agent from the run page: the dialog says what the parent receives,
the tree shows the cancel at once, and the parent goes on with an explicit marker."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from forgeui.models import Interrupt, Run
from forgeui.runs import services

pytestmark = pytest.mark.django_db(transaction=True)
ACCEPT = {"type": "accept", "args": None}  # what the example graphs' actions take
HTMX = {"HTTP_HX_REQUEST": "true"}
QUEUED = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"},
          "notify": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def supervisor_run(users: dict[str, User]) -> tuple[Run, dict[str, Interrupt]]:
    started = services.start_run(users["supervisor"], "supervisor", {"topic": "q3"})
    pending = Interrupt.objects.of_tree(started.thread_id).pending()
    return Run.objects.get(pk=started.run_id), {i.sub_agent_id: i for i in pending}


def node_html(page: str, run_id: str) -> str:
    return page.split(f'id="run-{run_id}"', 1)[1].split('class="tree-node', 1)[0]


def test_the_dialog_says_what_the_parent_receives(users: dict[str, User]) -> None:
    run, _ = supervisor_run(users)
    client = Client()
    client.force_login(users["supervisor"])
    page = client.get(f"/runs/{run.run_id}/").content.decode()
    confirms = [html.unescape(c) for c in re.findall(r'hx-confirm="([^"]*)"', page)]
    writer = next(c for c in confirms if "writer_agent" in c)
    assert '{"cancelled": true, "node": "writer_agent"}' in writer
    assert any(c.startswith("Cancel the whole run") for c in confirms)


def test_a_queued_cancel_shows_at_once_without_the_childs_form(users: dict[str, User]) -> None:
    run, asked = supervisor_run(users)
    writer = asked["writer_agent"].run_id
    client = Client()
    client.force_login(users["supervisor"])
    with override_settings(TASKS=QUEUED):
        response = client.post(f"/runs/{writer}/cancel/", {"page_run": run.run_id}, **HTMX)
    page = response.content.decode()
    assert response.status_code == 200 and "Cancellation requested" in page
    # The page's own tree, redrawn: its run is the current one, not the child's.
    assert re.search(rf'class="tree-node [^"]* current"[^>]* id="run-{run.run_id}"', page)
    assert "data-live-busy" in page  # followed until the cancel is done
    child = node_html(page, writer)
    assert "cancelling…" in child and "/answer/" not in child and "/steer/" not in child
    research = node_html(page, asked["research_agent"].run_id)
    assert "cancelling…" not in research and "/answer/" in research


def test_the_parent_completes_with_the_cancelled_marker(users: dict[str, User]) -> None:
    run, asked = supervisor_run(users)
    client = Client()
    client.force_login(users["supervisor"])
    page = client.post(f"/runs/{asked['writer_agent'].run_id}/cancel/",
                       {"page_run": run.run_id}, **HTMX).content.decode()
    assert "cancelling…" not in page  # applied already (tasks run at once here)
    assert "cancelled" in node_html(page, asked["writer_agent"].run_id)
    services.answer_interrupt(users["reviewer"], asked["research_agent"].pk, ACCEPT)
    run.refresh_from_db()
    assert run.status == "completed"
    assert run.output["report"]["writer_agent"] == {"cancelled": True, "node": "writer_agent"}
