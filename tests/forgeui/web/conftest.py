"""The web tests' shared fixtures."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from forgeui.models import Interrupt
from forgeui.runs import services


@pytest.fixture
def paused(users: dict[str, User]) -> Interrupt:
    """alice and bob review in finance; the supervisor, in finance too, started it."""
    finance = Group.objects.create(name="finance")
    for name in ("alice", "bob"):
        person = User.objects.create_user(name, password=name)
        person.groups.add(Group.objects.get(name="reviewer"), finance)
    users["supervisor"].groups.add(finance)
    started = services.start_run(users["supervisor"], "signoff", {"payload": {}})
    return Interrupt.objects.of_tree(started.thread_id).pending().get()
