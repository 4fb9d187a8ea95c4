"""Teams in the browser: two reviewers of different teams side by side, each in a browser
context of their own; a new interrupt of one team reaches that team's inbox live, and
never the other's.

Finance owns the demo graph ``transfer``, support owns ``deploy``; the server reads them
from ``FORGE_TEAMS`` as production does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.processes import manage

from .conftest import LiveServer, Seed, serve

TEAMS = {"finance": {"graphs": ["transfer"]}, "support": {"graphs": ["deploy"]}}
MEMBERS = {"fin": "finance:reviewer", "sup": "support:reviewer"}
LIVE_MS = 3000
# Past the fallback poll's delay: anything that would still come has come by then.
SETTLED_MS = 1500

ADD_MEMBERS = """
from django.contrib.auth.models import Group, User
for name, group in {members}.items():
    user = User.objects.create_user(name, password="team-" + name)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
"""


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Iterator[LiveServer]:
    """A live forge with two teams and a reviewer in each."""
    with serve(tmp_path_factory.mktemp("teams"), seeded,
               FORGE_TEAMS=json.dumps(TEAMS)) as server:
        manage("shell", "-c", ADD_MEMBERS.format(members=MEMBERS), env=server.env)
        yield server


def inbox_of(browser: Any, server: LiveServer, who: str) -> Any:
    """``who``'s inbox, live, in a browser context of its own."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto(f"{server.url}/accounts/login/?next=/")
    page.fill("#id_username", who)
    page.fill("#id_password", f"team-{who}")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")
    page.wait_for_selector("#live-status[data-state=on]")
    return page


def row(page: Any, interrupt_id: str) -> Any:
    return page.locator(f"#int-{interrupt_id}")


def test_a_new_interrupt_reaches_only_its_teams_inbox_live(browser: Any,
                                                           forge: LiveServer) -> None:
    finance, support = (inbox_of(browser, forge, who) for who in MEMBERS)
    try:
        [paid] = forge.start("transfer", {"amount": 7, "to": "ACME Ltd"})
        [shipped] = forge.start("deploy", {"version": "9.9.9"})
        expect(row(finance, paid["id"])).to_be_visible(timeout=LIVE_MS)
        expect(row(support, shipped["id"])).to_be_visible(timeout=LIVE_MS)
        finance.wait_for_timeout(SETTLED_MS)
        expect(row(finance, shipped["id"])).to_have_count(0)
        expect(row(support, paid["id"])).to_have_count(0)
        assert shipped["id"] not in finance.content() and "9.9.9" not in finance.content()
        assert paid["id"] not in support.content() and "ACME" not in support.content()
    finally:
        finance.context.close()
        support.context.close()
