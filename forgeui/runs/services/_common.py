"""What every verb shares: the acting user's type, roles and their audited refusals, the
audit row, enqueueing on commit, JSON and schema checks, the rows a verb acts on, and what
a refused answer is told. Private to this package.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

import jsonschema  # type: ignore[import-untyped]
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from forgeui.models import AuditEntry, Interrupt, InterruptStatus, Run, RunStatus
from forgeui.permissions.roles import Action, allowed, needed_roles
from forgeui.runs import registry, storable
from forgeui.runs.exceptions import Forbidden, InvalidRequest, NotFound, StaleAnswer
from forgeui.store import DjangoCheckpointStore
from forgeui.team.sign_in import method_of
from runtime.checkpoint import Head

User: TypeAlias = AbstractBaseUser | AnonymousUser | None


LIVE = (RunStatus.RUNNING, RunStatus.INTERRUPTED, RunStatus.FAILED)


def require_role(user: User, action: Action, team: str | None = None, **target: Any) -> None:
    """Raise ``Forbidden`` unless ``user`` may do ``action`` on an object of ``team`` (""
    = owned by no team; None: anywhere at all); the refusal is audited."""
    if allowed(user, action, team):
        return
    where = f" in team {team!r}" if team else ""
    reason = f"{action} needs one of the roles: {needed_roles(action)}{where}"
    audit(user, f"{action}.denied", **target, **({"team": team} if team else {}),
          detail={"reason": reason})
    raise Forbidden(reason)


def audit(user: User, action: str, **fields: Any) -> AuditEntry:
    actor = user if user is not None and user.is_authenticated else None
    return AuditEntry.objects.create(actor=actor, sign_in=method_of(actor), action=action,
                                     **fields)


def require_json(value: Any, what: str, loc: list[str | int] | None = None) -> None:
    """Refuse a value that is not JSON, or holds text the database cannot store."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{what} must be JSON: {exc}", loc=loc) from None
    if problem := storable.text_problem(value):
        raise InvalidRequest(f"{what} cannot be used: {problem}", loc=loc)


def check_input(schema: dict[str, Any] | None, input: Any,
                loc: list[str | int] | None = None) -> None:
    """Refuse an input the graph's ``input_schema`` rejects, naming the field.

    A left-out input (None) is the graph's to default, as its nodes decide.
    """
    if not schema or input is None:
        return
    _match_schema(schema, input, loc or ["body", "input"], "input",
                  "the graph's input_schema")


def _match_schema(schema: dict[str, Any], value: Any, loc: list[str | int], what: str,
                  whose: str) -> None:
    try:
        error = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(value))
    except jsonschema.SchemaError as exc:  # the graph's bug, not the caller's
        raise InvalidRequest(f"{whose} is not a valid JSON Schema: {exc.message}",
                             loc=loc) from None
    if error is not None:
        raise InvalidRequest(f"{what} does not match {whose} at {error.json_path}: "
                             f"{error.message}", loc=[*loc, *error.absolute_path])


def require_graph(run: Run) -> None:
    """Raise ``GraphUnavailable`` when the run's graph cannot be loaded here.

    Checked before anything is recorded: an accepted answer (or note, or cancel) for a
    graph no worker can load would only fail later, in the background.
    """
    registry.executor_for(run.graph)


def get_run(user: User, run_id: str) -> Run:
    """The run, if ``user`` may read it: one of another team is as missing as none."""
    run = Run.objects.visible_to(user).filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"no run {run_id!r}")
    return run


def get_interrupt(user: User, interrupt_id: str) -> Interrupt:
    """The interrupt, if ``user`` may read it (else ``NotFound``, as for none)."""
    interrupt = (Interrupt.objects.visible_to(user).select_related("run", "claimed_by")
                 .filter(pk=interrupt_id).first())
    if interrupt is None:
        raise NotFound(f"no interrupt {interrupt_id!r}")
    return interrupt


def readable_head(user: User, thread_id: str) -> tuple[Head, str]:
    """The thread's latest checkpoint and its team, if ``user`` may read the thread."""
    latest = latest_head(thread_id)
    team = (Run.objects.visible_to(user).filter(pk=latest.run_id)
            .values_list("team", flat=True).first())
    if team is None:
        raise NotFound(f"no thread {thread_id!r}")
    return latest, team


def latest_head(thread_id: str) -> Head:
    latest = DjangoCheckpointStore().load_head_sync(thread_id)
    if latest is None:
        raise NotFound(f"no thread {thread_id!r}")
    return latest


def latest_metadata(run: Run) -> dict[str, Any]:
    pending = Interrupt.objects.of_tree(run.root_thread_id).pending().order_by("created_at")
    return {"run_id": run.run_id, "thread_id": run.thread_id,
            "root_thread_id": run.root_thread_id, "checkpoint_id": run.latest_checkpoint_id,
            "status": run.status, "interrupts": list(pending.values_list("id", flat=True))}


def stale_answer(interrupt_id: str, expected_checkpoint_id: str | None) -> StaleAnswer:
    """Why an answer lost, with what a client needs to catch up."""
    row = Interrupt.objects.select_related("run", "answered_by", "claimed_by").get(
        pk=interrupt_id)
    if row.status == InterruptStatus.PENDING and row.claimed_by_id is not None:
        reason = f"claimed meanwhile by {row.claimed_by.get_username()}"
    elif row.status == InterruptStatus.PENDING:
        reason = (f"the run moved on: checkpoint {expected_checkpoint_id!r} is not the "
                  f"latest ({row.checkpoint_id!r})")
    elif row.status == InterruptStatus.CANCELLED and row.answered_by is not None:
        reason = f"the run was cancelled at this breakpoint by {row.answered_by.get_username()}"
    elif row.answered_by is not None:
        reason = f"already answered by {row.answered_by.get_username()}"
    else:
        reason = f"the interrupt is {row.status}"
    return StaleAnswer(
        interrupt_id, row.status,
        row.answered_by.get_username() if row.answered_by else None,
        row.answered_at.isoformat() if row.answered_at else None, latest_metadata(row.run),
        reason,
    )


def refused(user: User, interrupt: Interrupt, stale: StaleAnswer, value: Any) -> None:
    audit(user, "answer.refused", object_type="interrupt", object_id=interrupt.pk,
          team=interrupt.team,
          run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
          before_checkpoint_id=stale.latest.get("checkpoint_id") or "",
          detail={**stale.as_dict(), "value": clipped(value)})


REFUSED_VALUE_CHARS = 1000  # a refused value is kept as evidence, not in full


def clipped(value: Any) -> Any:
    """``value`` itself when its JSON is short; else its size and a preview, so a refused
    megabyte does not land in the append-only log."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= REFUSED_VALUE_CHARS:
        return value
    return {"truncated": True, "json_chars": len(text), "preview": text[:200]}
