"""What people do to runs, in one place the API and the pages both call.

Each service checks the role, records the intent and its audit row in one transaction,
and leaves graph execution to a task enqueued on commit. Nothing here runs node code.
One module per verb: ``starting``, ``answering`` (then ``voting``, then the private
``_recording``), ``claims``, ``steering``, ``lifecycle`` (recover, cancel) and
``forking`` (the work, the edits it takes, its links and its wording); ``checks`` holds
the rules an answer obeys however it comes, ``_common`` what every verb shares.

Roles (``forgeui.permissions.roles``): ``reviewer`` answers, adds notes and forks;
``supervisor`` also starts, cancels, recovers and resumes targeted sub-agents; ``auditor``
only reads. Superusers and ``user=None`` (management commands) may do all, a role held in a
team only on that team's objects. A refusal leaves an audit row, nothing else.
"""

from __future__ import annotations

from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.exceptions import StaleAnswer
from forgeui.runs.services._common import (
    LIVE,
    REFUSED_VALUE_CHARS,
    User,
    audit,
    check_input,
    clipped,
    get_interrupt,
    get_run,
    latest_metadata,
    require_graph,
    require_json,
    require_role,
    stale_answer,
)
from forgeui.runs.services.answering import answer_interrupt, resume_map, resume_targeted
from forgeui.runs.services.checks import require_answerable, require_may_answer
from forgeui.runs.services.claims import (
    assign_interrupt,
    changed,
    claim_interrupt,
    release_interrupt,
)
from forgeui.runs.services.forking.work import fork_thread
from forgeui.runs.services.lifecycle import (
    MAX_REASON_CHARS,
    cancel_at_breakpoint,
    cancel_reason,
    cancel_run,
    recover_run,
)
from forgeui.runs.services.starting import StartedRun, start_run
from forgeui.runs.services.steering import add_steering_note
from forgeui.runs.services.voting import Decided

__all__ = [
    "LIVE", "MAX_REASON_CHARS", "REFUSED_VALUE_CHARS", "Decided", "StaleAnswer", "StartedRun",
    "User", "add_steering_note", "answer_interrupt", "assign_interrupt", "audit",
    "cancel_at_breakpoint", "cancel_reason", "cancel_run", "changed", "check_input",
    "claim_interrupt", "clipped", "enqueue_on_commit", "fork_thread", "get_interrupt",
    "get_run", "latest_metadata",
    "recover_run", "release_interrupt", "require_answerable", "require_graph",
    "require_json", "require_may_answer", "require_role", "resume_map", "resume_targeted",
    "stale_answer", "start_run",
]
