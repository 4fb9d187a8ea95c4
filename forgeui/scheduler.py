"""Periodic work every few seconds: the deadline sweep (``expire_interrupts_task``),
handing new inbox events to webhooks and e-mail (``fan_out_task``), and a walk over the
audit chain once it is due (``verify_audit_task``: from the last verified tip every
``FORGE_AUDIT_VERIFY_SECONDS``, from the first entry every
``FORGE_AUDIT_FULL_VERIFY_SECONDS``), and another try at Slack messages an outage left
behind (``forgeui.slack.tasks.resync_task``).

Both tasks live here, above the features they drive, because each feature's own tasks
are enqueued by that feature's lower modules and must not import them back.

The embedded default has no scheduler process, so the web process runs a daemon thread
that enqueues the task on its own thread pool (``asgi.py`` starts it when the tasks run
in-process, which is what ``make run`` serves). In production run one sweeper next to the
workers: ``manage.py expire_interrupts --loop`` (or ``expire_interrupts`` from cron). Two
sweepers are harmless: each interrupt is handled by a conditional update or an answer's
compare-and-set, whichever sweeper gets there first.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django_tasks import task

from forgeui.models import verify_when_due
from forgeui.notifications import fanout
from forgeui.runs import deadlines
from forgeui.slack.tasks import resync_task

logger = logging.getLogger(__name__)

_started = threading.Event()


def interval() -> float:
    return float(getattr(settings, "FORGE_SWEEP_SECONDS", 10))


def sweep_once() -> None:
    """One tick: the deadline sweep, then notifications for what changed."""
    for periodic in (expire_interrupts_task, fan_out_task, verify_audit_task, resync_task):
        try:
            periodic.enqueue()
        except Exception:  # the next tick tries again
            logger.exception("could not enqueue %s", periodic.name)


@task()
def expire_interrupts_task() -> dict[str, Any]:
    """The periodic deadline sweep."""
    done = deadlines.expire_interrupts()
    return {"handled": [{"interrupt_id": e.interrupt_id, "outcome": e.outcome} for e in done]}


@task()
def fan_out_task() -> dict[str, Any]:
    """The periodic hand-over of inbox events to webhooks and e-mail."""
    return {"deliveries": fanout.fan_out()}


@task()
def verify_audit_task() -> dict[str, Any]:
    """The periodic walk over the audit chain, when the last one is old enough."""
    verdict = verify_when_due()
    if verdict is None:
        return {"verified": None}
    if verdict.broken is not None:
        logger.error("audit chain broken: %s", verdict.broken.message)
    return {"verified": verdict.entries, "ok": verdict.ok}


def start_embedded() -> None:
    """Start the sweeper thread once per process."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=_loop, name="forge-scheduler", daemon=True).start()


def _loop() -> None:
    stop = threading.Event()
    while not stop.wait(interval()):
        sweep_once()
