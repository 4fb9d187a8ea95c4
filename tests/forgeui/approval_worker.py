"""One approver in the approval race (``test_policy_race``): its own process and Django.

``python -m tests.forgeui.approval_worker setup LEDGER`` makes the users and a paused run
of ``signoff`` and prints the interrupt's id. ``... approve USERNAME INTERRUPT_ID
GO_FILE`` prints ``ready``, waits for ``GO_FILE``, approves through the service and
prints ``{"outcome": ...}`` as its last line. ``FORGE_POLICIES`` comes from the
environment, as a site's would.
"""

from __future__ import annotations

import json
import os
import sys
import time


def setup(ledger: str) -> None:
    from django.contrib.auth.models import Group, User

    from forgeui.models import Interrupt
    from forgeui.runs import services

    reviewer, _ = Group.objects.get_or_create(name="reviewer")
    starter = User.objects.create_user("starter", password="x")
    starter.groups.add(Group.objects.get_or_create(name="supervisor")[0])
    for name in ("alice", "bob", "carol"):
        User.objects.create_user(name, password="x").groups.add(reviewer)
    started = services.start_run(starter, "signoff", {"payload": {}, "ledger": ledger})
    print(Interrupt.objects.of_tree(started.thread_id).pending().get().pk)


def approve(username: str, interrupt_id: str, go_file: str) -> None:
    from django.contrib.auth.models import User

    from forgeui.runs import services
    from forgeui.runs.exceptions import AlreadyCounted, StaleAnswer

    user = User.objects.get(username=username)
    print("ready", flush=True)
    while not os.path.exists(go_file):
        time.sleep(0.002)
    try:
        made = services.answer_interrupt(user, interrupt_id, True)
    except AlreadyCounted:
        outcome = "counted already"
    except StaleAnswer:
        outcome = "stale"
    else:
        outcome = "resumed" if made.answer is not None else "counted"
    print(json.dumps({"outcome": outcome, "user": username}))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    {"setup": setup, "approve": approve}[sys.argv[1]](*sys.argv[2:])
