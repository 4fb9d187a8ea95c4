"""What ``DjangoCheckpointStore.save`` does beside the checkpoint: rows, events, messages."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from channels.layers import get_channel_layer
from django.db import IntegrityError, connections, transaction

from forgeui.inbox import broadcast
from forgeui.inbox.broadcast import INBOX_GROUP, INBOX_MESSAGE_TYPE
from forgeui.models import AuditEntry, Event, Interrupt, Run
from forgeui.models import Checkpoint as CheckpointRow
from forgeui.models.events import EventDraft, write_events
from forgeui.runs import registry
from forgeui.store import DjangoCheckpointStore
from runtime import CheckpointConflict, DurableExecutor, ResumeTarget
from tests.runtime.store_conformance import make_checkpoint

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def store(close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
    yield DjangoCheckpointStore()


def executor(graph: str, store: DjangoCheckpointStore) -> DurableExecutor:
    return registry.get_executor(graph).with_store(store)


def serve_from_this_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Group messages go to this test's loop, as they go to daphne's once a socket opened:
    the in-memory layer's queues wake only the loop they belong to."""
    monkeypatch.setattr(broadcast, "_server_loop", asyncio.get_running_loop())


async def test_a_pause_becomes_run_and_interrupt_rows(store: DjangoCheckpointStore) -> None:
    result = await executor("transfer", store).run({"amount": 9}, metadata={"started_by": None})
    run = await Run.objects.aget(pk=result.run_id)
    assert (run.status, run.thread_id, run.root_thread_id) == (
        "interrupted", result.thread_id, result.thread_id)
    assert run.latest_checkpoint_id == result.checkpoint_id and run.input == {"amount": 9}
    interrupt = await Interrupt.objects.aget(run=run)
    (expected,) = result.interrupts
    assert (interrupt.pk, interrupt.node, interrupt.task_id, interrupt.order) == (
        expected.id, "ask", expected.task_id, 0)
    assert interrupt.payload == {"question": "Approve this transfer?"}
    assert interrupt.checkpoint_id == expected.checkpoint_id == result.checkpoint_id
    assert interrupt.status == "pending" and interrupt.namespace == ["transfer"]


async def test_sub_agent_runs_are_rows_of_one_tree(store: DjangoCheckpointStore) -> None:
    result = await executor("nested", store).run({"case": 1})
    runs = [r async for r in Run.objects.of_tree(result.thread_id).order_by("created_at")]
    assert [r.namespace for r in runs] == [
        ["nested"], ["nested", "team_agent"], ["nested", "team_agent", "specialist_agent"]]
    assert [r.sub_agent_id for r in runs] == ["", "team_agent", "specialist_agent"]
    assert [r.parent_run_id for r in runs] == [None, runs[0].run_id, runs[1].run_id]
    (interrupt,) = [i async for i in Interrupt.objects.of_tree(result.thread_id)]
    assert interrupt.run_id == runs[2].run_id and interrupt.sub_agent_id == "specialist_agent"
    assert interrupt.thread_id == runs[2].thread_id != result.thread_id


async def test_answering_and_cancelling_close_the_rows(store: DjangoCheckpointStore) -> None:
    ex = executor("supervisor", store)
    result = await ex.run({"topic": "Q4"})
    research, writer = sorted(result.interrupts, key=lambda i: i.namespace)
    await ex.resume_targeted(ResumeTarget(research.run_id, interrupt_id=research.id), "accept")
    assert (await Interrupt.objects.aget(pk=research.id)).status == "answered"
    assert (await Interrupt.objects.aget(pk=writer.id)).status == "pending"
    await ex.cancel(result.thread_id)
    writer_row = await Interrupt.objects.aget(pk=writer.id)
    assert writer_row.status == "cancelled" and writer_row.answered_at is not None
    assert (await Run.objects.aget(pk=result.run_id)).status == "cancelled"


async def test_events_follow_commits_in_order_and_reach_the_inbox_group(
    store: DjangoCheckpointStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve_from_this_loop(monkeypatch)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(INBOX_GROUP, channel)
    result = await executor("transfer", store).run({})
    events = [e async for e in Event.objects.after(0)]
    assert [e.kind for e in events] == ["run.updated", "interrupt.created", "run.updated"]
    assert events[1].interrupt_id == result.interrupts[0].id
    assert {e.root_thread_id for e in events} == {result.thread_id}
    received = []
    while len(received) < len(events):  # one message per drained batch, ids in order
        message = await layer.receive(channel)
        assert message["type"] == INBOX_MESSAGE_TYPE
        received += message["event_ids"]
    assert received == [e.id for e in events]
    assert [e.id async for e in Event.objects.after(events[0].id)] == [e.id for e in events[1:]]


async def test_with_nobody_in_the_inbox_group_saves_wake_no_thread(
    store: DjangoCheckpointStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In-memory layer, no socket joined: no loop is woken to tell nobody, but the events
    are written (a socket that joins later catches up from them)."""
    serve_from_this_loop(monkeypatch)
    layer = get_channel_layer()
    monkeypatch.setattr(layer, "groups", {})
    drains: list[int] = []
    drain = broadcast._Outbox._drain

    def counted(outbox: broadcast._Outbox, layer: object) -> object:
        drains.append(1)
        return drain(outbox, layer)

    monkeypatch.setattr(broadcast._Outbox, "_drain", counted)
    quiet = await executor("transfer", store).run({})
    assert drains == []
    assert await Event.objects.filter(root_thread_id=quiet.thread_id).acount() == 3
    channel = await layer.new_channel()
    await layer.group_add(INBOX_GROUP, channel)
    heard = await executor("transfer", store).run({})
    assert drains
    first = await Event.objects.filter(root_thread_id=heard.thread_id).order_by("id").afirst()
    assert (await layer.receive(channel))["event_ids"][0] == first.id


def test_each_deletion_is_audited_once_not_the_hidden_records_it_leaves(
        store: DjangoCheckpointStore) -> None:
    ex = executor("transfer", store)
    original = ex.run_sync({"amount": 5}, thread_id="audited-original").thread_id
    fork = ex.fork_sync(original)
    store.delete_thread(original)  # the fork builds on its records: they stay, hidden
    assert CheckpointRow.objects.filter(thread__thread_id__startswith=original).exists()
    store.delete_thread(fork)  # now nothing needs them: they go too
    assert not CheckpointRow.objects.filter(thread__thread_id__startswith=original).exists()
    deleted = AuditEntry.objects.filter(action="thread.delete").order_by("seq")
    assert [(e.thread_id, e.actor_id) for e in deleted] == [(original, None), (fork, None)]


async def test_a_lost_compare_and_set_writes_no_rows(store: DjangoCheckpointStore) -> None:
    first = make_checkpoint("t-rows", None, run_id="r-rows", interrupts=[])
    await store.save(first)
    before = await Event.objects.acount()
    stale = make_checkpoint("t-rows", None, run_id="r-rows", status="completed")
    with pytest.raises(Exception, match="moved on"):
        await store.save(stale)
    assert (await Run.objects.aget(pk="r-rows")).status == "interrupted"
    assert not await Interrupt.objects.aexists()
    assert await Event.objects.acount() == before
    assert await CheckpointRow.objects.filter(thread_id="t-rows").acount() == 1


async def test_integrity_errors_that_are_not_conflicts_are_not_disguised(
    store: DjangoCheckpointStore,
) -> None:
    # A started_by naming no user breaks a foreign key: a bug, not a lost race.
    cp = make_checkpoint("t-bug", None, run_id="r-bug", metadata={"started_by": 987654})
    with pytest.raises(IntegrityError):
        await store.save(cp)
    assert await store.load("t-bug") is None


def test_the_store_works_under_asyncio_run_in_worker_threads(
    store: DjangoCheckpointStore,
) -> None:
    """How tasks drive graphs: each worker thread runs its own event loop."""
    ex = executor("transfer", store)
    results: list[str] = []

    def worker() -> None:
        try:
            results.append(asyncio.run(ex.run({"from": threading.current_thread().name})).status)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == ["interrupted"] * 4
    assert Run.objects.filter(status="interrupted").count() == 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_event_writers_wait_for_each_other_until_commit_on_postgres() -> None:
    """Ids become visible in id order: a later writer waits for the earlier one's commit."""
    first_wrote, first_may_commit = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        try:
            with transaction.atomic(using="postgres"):
                write_events([EventDraft("run.updated", run_id="first")], "postgres")
                first_wrote.set()
                first_may_commit.wait(10)
                order.append("first commits")
        finally:
            connections.close_all()

    def second() -> None:
        try:
            first_wrote.wait(10)
            with transaction.atomic(using="postgres"):
                write_events([EventDraft("run.updated", run_id="second")], "postgres")
                order.append("second wrote")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_wrote.wait(10)
    time.sleep(0.3)  # time enough for the second writer to insert, were it not blocked
    order.append("released")
    first_may_commit.set()
    for thread in threads:
        thread.join(10)
    assert order == ["released", "first commits", "second wrote"]
    ids = dict(Event.objects.using("postgres").values_list("run_id", "id"))
    assert ids["first"] < ids["second"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_a_lost_compare_and_set_in_a_saves_one_statement_writes_nothing_on_postgres() -> None:
    """On PostgreSQL a save is one statement and its own transaction: every write and
    event of it waits on the thread's compare-and-set, so a stale save leaves nothing."""
    store = DjangoCheckpointStore("postgres")
    try:
        first = make_checkpoint("t-one", None, run_id="r-one", interrupts=[])
        store.save_sync(first)
        second = make_checkpoint("t-one", first.id, run_id="r-one")
        store.save_sync(second)
        events = Event.objects.using("postgres").count()
        # Saved after ``first`` by a writer that missed ``second``; the position it
        # believes in would fit no row, so only the compare-and-set can refuse it.
        stale = make_checkpoint("t-one", first.id, run_id="r-one", status="completed",
                                interrupts=[{"id": "i2", "payload": None}])
        stale.position = (first.id, 5)
        with pytest.raises(CheckpointConflict):
            store.save_sync(stale)
        run = Run.objects.using("postgres").get(pk="r-one")
        assert (run.status, run.latest_checkpoint_id) == ("interrupted", second.id)
        assert list(Interrupt.objects.using("postgres").values_list("id", flat=True)) == ["i1"]
        assert Event.objects.using("postgres").count() == events
        assert CheckpointRow.objects.using("postgres").filter(thread_id="t-one").count() == 2
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_a_saves_events_wait_for_an_earlier_event_writer_on_postgres() -> None:
    """The event-ordering lock in a save's one statement: a save whose events come after
    another writer's waits for that writer's commit, and its ids are the larger."""
    holding, may_commit = threading.Event(), threading.Event()
    order: list[str] = []

    def writer() -> None:
        try:
            with transaction.atomic(using="postgres"):
                write_events([EventDraft("run.updated", run_id="writer")], "postgres")
                holding.set()
                may_commit.wait(10)
                order.append("writer commits")
        finally:
            connections.close_all()

    def saver() -> None:
        try:
            holding.wait(10)
            DjangoCheckpointStore("postgres").save_sync(
                make_checkpoint("t-wait", None, run_id="r-wait"))
            order.append("save done")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer), threading.Thread(target=saver)]
    for thread in threads:
        thread.start()
    holding.wait(10)
    time.sleep(0.3)  # time enough for the save to commit, were it not waiting
    order.append("released")
    may_commit.set()
    for thread in threads:
        thread.join(10)
    assert order == ["released", "writer commits", "save done"]
    ids = list(Event.objects.using("postgres").order_by("id").values_list("run_id", flat=True))
    assert ids[0] == "writer" and set(ids[1:]) == {"r-wait"} and len(ids) == 3
