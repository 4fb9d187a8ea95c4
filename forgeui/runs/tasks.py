"""Graph execution as django-tasks: web code records intent, these tasks run the graph.

Every task re-reads the latest checkpoint before acting, so a retried or duplicated task
finds its work already done and stops: an answer is handed to the runtime once, and the
runtime itself refuses an interrupt that is no longer open.

The tasks that drive graphs are coroutines, so ``forge_worker`` runs many at once on one
event loop: a node awaiting a model holds no thread. Their ORM work goes through
``inflight.off_loop``: where tasks run in flight (``forge_worker``, the embedded loop) on
the loop's pool, each call on its thread's connection; under django-tasks' immediate
backend, which calls them through ``async_to_sync``, back on the calling thread, inside
its transaction.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from django.db import transaction
from django.db.models import F, Prefetch
from django.utils import timezone
from django_tasks import task

from forgeui.models import Answer, AuditEntry, Run, SteeringNote
from forgeui.runs import logs, registry, run_status
from forgeui.runs.enqueueing import enqueue_on_commit
from forgeui.runs.graph_runner import GraphRunner
from forgeui.runs.inflight import WORKER_STORE, in_worker, off_loop
from forgeui.runs.policies import auto
from forgeui.store import DjangoCheckpointStore
from runtime import Command, DurableExecutor, ResumeTarget, RunResult
from runtime.checkpoint import Head
from runtime.errors import CheckpointConflict, NodeError, ResumeError, StaleResumeTarget

logger = logging.getLogger(__name__)

MAX_APPLY_ATTEMPTS = 20
AnswerState = Literal["open", "accepted", "answered", "cancelled", "gone"]


async def drive(executor: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``executor.method(...)``, awaited on this loop when the executor is async (a forge
    graph, or a LangGraph graph with async nodes), else its ``*_sync`` twin on a thread
    (the worker's pool, or the caller's own)."""
    if isinstance(executor, DurableExecutor):
        return await getattr(in_worker(executor), method)(*args, **kwargs)
    if getattr(executor, "awaits", False):
        return await getattr(executor, method)(*args, **kwargs)
    return await off_loop(getattr(executor, f"{method}_sync"))(*args, **kwargs)


def summary(result: RunResult) -> dict[str, Any]:
    """A task's JSON return value: where the root run stands."""
    return {"thread_id": result.thread_id, "run_id": result.run_id, "status": result.status,
            "checkpoint_id": result.checkpoint_id,
            "interrupts": [i.id for i in result.interrupts]}


def store() -> DjangoCheckpointStore:
    return WORKER_STORE.get() or DjangoCheckpointStore()


@off_loop
def graph_of_run(run_id: str) -> str:
    return Run.objects.values_list("graph", flat=True).get(pk=run_id)


async def executor_of_run(run_id: str) -> GraphRunner:
    return registry.executor_for(await graph_of_run(run_id))


@task()
async def start_run_task(graph: str, thread_id: str, request_id: str) -> dict[str, Any]:
    """Start the accepted start ``request_id`` of ``graph`` on ``thread_id``; a second
    delivery of one request is a no-op. The job names the start; its input and who
    started it are read from the start's audit row, so no payload travels in a queue."""
    executor = registry.get_executor(graph)
    existing = await store().load_head(thread_id)
    if existing is not None and existing.metadata.get("request_id") == request_id:
        return {"thread_id": thread_id, "run_id": existing.run_id, "status": existing.status,
                "duplicate": True}
    accepted = await off_loop(AuditEntry.objects.accepted_start)(request_id)
    if accepted is None:
        logger.warning("start %s of %s: no such accepted start", request_id, graph)
        return {"thread_id": thread_id, "status": "unknown", "request_id": request_id}
    input, started_by = accepted
    metadata = {"started_by": started_by, "request_id": request_id, "registered_as": graph}
    with logs.about(run_id=request_id, thread_id=thread_id):
        try:
            started = await drive(executor, "run", input, thread_id=thread_id,
                                  metadata=metadata, run_id=request_id)
        except NodeError as exc:  # the run is saved as failed; recover_runs can retry it
            logger.warning("run of %s failed: %s", graph, exc)
            return {"thread_id": thread_id, "status": "failed", "error": str(exc)}
        except ResumeError as exc:  # another start won the thread meanwhile
            logger.warning("start of %s on thread %s refused: %s", graph, thread_id, exc)
            return {"thread_id": thread_id, "status": "refused", "error": str(exc)}
    await decide_by_policy(started)
    return summary(started)


def auto_decide(result: RunResult) -> None:
    """Pauses an approval policy's rule approves are answered now, by the policy."""
    for answer in auto.decide([i.id for i in result.interrupts]):
        enqueue_on_commit(apply_answer_task, answer.pk)


async def decide_by_policy(result: RunResult) -> None:
    """``auto_decide`` on a thread, where a policy may answer (most sites have none)."""
    if auto.may_decide([i.id for i in result.interrupts]):
        await off_loop(auto_decide)(result)


@task()
async def apply_answer_task(answer_id: int) -> dict[str, Any]:
    """Hand a recorded answer to the runtime, retrying until the tree has taken it in."""
    answer = await answer_to_apply(answer_id)
    if answer.applied_at is not None:
        return {"answer_id": answer_id, "outcome": "already applied"}
    interrupt = answer.interrupt
    with logs.about(run_id=interrupt.run_id, thread_id=interrupt.thread_id,
                    interrupt_id=interrupt.pk):
        outcome = await (apply_cancel(answer) if answer.cancels_run else apply_answer(answer))
        logger.info("answer %s: %s", answer_id, outcome["outcome"])
        return outcome


@off_loop
def answer_to_apply(answer_id: int) -> Answer:
    """The answer with its interrupt, its run's graph (``graph``) and the notes that go with
    it (``notes_in_order``): what applying it needs, in one trip off the loop."""
    notes = Prefetch("notes", queryset=SteeringNote.objects.order_by("id"),
                     to_attr="notes_in_order")
    return (Answer.objects.select_related("interrupt").prefetch_related(notes)
            .annotate(graph=F("interrupt__run__graph")).get(pk=answer_id))


async def apply_answer(answer: Answer) -> dict[str, Any]:
    answer_id = answer.pk
    for _ in range(MAX_APPLY_ATTEMPTS):
        state = await answer_state(answer.interrupt.run_id, answer.interrupt_id)
        if state != "open":
            await not_applied(answer, state)
            return {"answer_id": answer_id, "outcome": OUTCOMES[state]}
        try:
            result = await resume_with(answer)
        except (CheckpointConflict, StaleResumeTarget) as exc:
            logger.info("answer %s: %s; reloading", answer_id, exc)
            continue
        except NodeError as exc:  # answered, but the resumed node failed
            await off_loop(Answer.objects.mark_applied)(
                answer_id, f"applied; the run failed: {exc}")
            return {"answer_id": answer_id, "outcome": "applied", "status": "failed"}
        await applied(answer, result, "applied")
        await decide_by_policy(result)
        return {"answer_id": answer_id, "outcome": "applied", **summary(result)}
    raise ResumeError(f"answer {answer_id}: gave up after {MAX_APPLY_ATTEMPTS} attempts")


OUTCOMES: dict[str, str] = {
    "accepted": "applied (taken in by the executor holding the run)",
    "answered": "applied",
    "cancelled": "not applied: the interrupt was cancelled first",
    "gone": "not applied: the interrupt is no longer pending",
}


@off_loop
def not_applied(answer: Answer, state: AnswerState) -> None:
    Answer.objects.mark_applied(answer.pk, OUTCOMES[state])
    if state != "accepted":  # nobody will work on it: the rows say so again
        run_status.settle(answer.interrupt.root_thread_id)


@off_loop
def applied(answer: Answer, result: RunResult, outcome: str) -> None:
    with transaction.atomic():  # nobody sees an applied answer without its audit row
        Answer.objects.mark_applied(answer.pk, outcome)
        audit_applied(answer, result)


def audit_applied(answer: Answer, result: RunResult) -> None:
    interrupt = answer.interrupt
    AuditEntry.objects.create(
        action="answer.applied", object_type="interrupt", object_id=interrupt.pk,
        run_id=interrupt.run_id, thread_id=interrupt.root_thread_id,
        before_checkpoint_id=interrupt.checkpoint_id, after_checkpoint_id=result.checkpoint_id,
        detail={"answer_id": answer.pk, "status": result.status},
    )


async def resume_with(answer: Answer) -> RunResult:
    interrupt = answer.interrupt
    # Under a policy every counted person's note goes with the answer, each its own row.
    notes = [note.text for note in answer.notes_in_order]
    command = Command(resume=answer.value, steering="\n\n".join(notes) or None,
                      child_policy=answer.child_policy,
                      metadata=answer.meta or None)
    target = ResumeTarget(run_id=interrupt.run_id, interrupt_id=interrupt.id)
    executor = registry.executor_for(answer.graph)
    return await drive(executor, "resume_targeted", target, command)


async def answer_state(run_id: str, interrupt_id: str) -> AnswerState:
    """Where the runtime stands on one interrupt, read from the latest checkpoints."""
    run = await store().load_run_head(run_id)
    if run is None:
        return "gone"
    root = await root_checkpoint(run)
    if root is not None and interrupt_id in root.engine.answers:
        return "accepted"
    if any(record["id"] == interrupt_id for record in run.interrupts):
        return "open"
    # Ended: only now read the run's history (rebuilt from its records) to say how.
    whole = await store().load_by_id(run.id)
    for record in whole.resolved if whole is not None else ():
        if record["id"] == interrupt_id:
            return "cancelled" if record.get("status") == "cancelled" else "answered"
    return "gone"


async def root_checkpoint(cp: Head) -> Head | None:
    if not cp.root_thread_id or cp.root_thread_id == cp.thread_id:
        return cp
    return await store().load_head(cp.root_thread_id)


@task()
async def apply_steering_task(note_id: int) -> dict[str, Any]:
    """Record a steering note in the run's checkpoint (nodes read it as ``ctx.steering``)."""
    note = await off_loop(SteeringNote.objects.get)(pk=note_id)
    if note.applied_at is not None:
        return {"note_id": note_id, "outcome": "already applied"}
    target = ResumeTarget(run_id=note.run_id, task_id=note.task_id or None,
                          interrupt_id=note.interrupt_id or None)
    try:
        await drive(await executor_of_run(note.run_id), "steer", target, note.text)
    except StaleResumeTarget as exc:
        outcome = f"not applied: {exc}"
    else:
        outcome = "applied"
    await off_loop(SteeringNote.objects.filter(pk=note_id, applied_at__isnull=True).update)(
        applied_at=timezone.now(), outcome=outcome)
    return {"note_id": note_id, "outcome": outcome}


@task()
async def cancel_run_task(run_id: str) -> dict[str, Any]:
    """Cancel a run and everything below it; pending interrupts end as cancelled."""
    try:
        result = await drive(await executor_of_run(run_id), "cancel", ResumeTarget(run_id=run_id))
    except StaleResumeTarget as exc:
        return {"run_id": run_id, "outcome": f"not cancelled: {exc}"}
    return {"run_id": run_id, "outcome": "cancelled", **summary(result)}


async def apply_cancel(answer: Answer) -> dict[str, Any]:
    """A cancel at a breakpoint: cancel the run it paused; a repeat finds it cancelled."""
    run_id = answer.interrupt.run_id
    try:
        result = await drive(await executor_of_run(run_id), "cancel", ResumeTarget(run_id=run_id))
    except StaleResumeTarget as exc:
        done = await off_loop(Run.objects.filter(pk=run_id, status="cancelled").exists)()
        outcome = "the run was cancelled" if done else f"not applied: {exc}"
        await off_loop(Answer.objects.mark_applied)(answer.pk, outcome)
        return {"answer_id": answer.pk, "outcome": outcome}
    await applied(answer, result, "the run was cancelled")
    return {"answer_id": answer.pk, "outcome": "applied", **summary(result)}


@task()
async def recover_run_task(thread_id: str) -> dict[str, Any]:
    """Go on with a root run whose executor died or whose node failed."""
    latest = await store().load_head(thread_id)
    if latest is None:
        return {"thread_id": thread_id, "outcome": "unknown thread"}
    executor = registry.executor_for(latest.metadata.get("registered_as") or latest.graph)
    try:
        result = await drive(executor, "recover", thread_id)
    except NodeError as exc:
        return {"thread_id": thread_id, "status": "failed", "error": str(exc)}
    finally:  # a run found with nothing to do must not keep reading "running"
        await off_loop(run_status.settle)(latest.root_thread_id or thread_id)
    await decide_by_policy(result)
    return summary(result)
