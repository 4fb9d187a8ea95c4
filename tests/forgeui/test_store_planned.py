"""The store's planned save (one statement on PostgreSQL, a burst on SQLite) against its
reading path, on both databases: the same rows and events, nothing on a lost race, a
caller's transaction respected, and the values sent as the ORM would send them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg._queries
import pytest
from django.db import connections, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from forgeui import fastsql, registry, saveplan, savesql
from forgeui.events import EVENT_COLUMNS, EventDraft
from forgeui.models import Checkpoint as CheckpointRow
from forgeui.models import Event, Interrupt, Run
from forgeui.store import DjangoCheckpointStore, _checkpoint_row
from forgeui.sync import run_row
from runtime import CheckpointConflict, DurableExecutor, ResumeTarget
from runtime.checkpoint import Checkpoint
from tests.runtime.store_conformance import make_checkpoint


class PlannedSave:
    alias = "sqlite"

    @pytest.fixture
    def store(self, close_worker_connections: None) -> Iterator[DjangoCheckpointStore]:
        yield DjangoCheckpointStore(self.alias)

    async def snapshot(self, thread_id: str) -> dict[str, Any]:
        """The rows a thread left, without ids and clock readings."""
        runs = Run.objects.using(self.alias).of_tree(thread_id).order_by("namespace")
        interrupts = Interrupt.objects.using(self.alias).of_tree(thread_id).order_by("node")
        events = Event.objects.using(self.alias).filter(root_thread_id=thread_id).order_by("id")
        return {
            "runs": [(r.namespace, r.status, r.sub_agent_id, r.output) async for r in runs],
            "interrupts": [(i.node, i.status, i.payload, i.answered_at is not None,
                            i.checkpoint_id != "") async for i in interrupts],
            "events": [(e.kind, e.interrupt_id != "", e.data.get("status"))
                       async for e in events],
        }

    async def supervise(self, store: DjangoCheckpointStore, answered_by_person: bool) -> str:
        """Two parallel sub-agents: one answered (maybe first by a person), one cancelled."""
        ex = registry.get_executor("supervisor").with_store(store)
        result = await ex.run({"topic": "Q4"})
        research, _ = sorted(result.interrupts, key=lambda i: i.namespace)
        if answered_by_person:  # the dashboard closed the row before the runtime applied it
            await Interrupt.objects.using(self.alias).filter(pk=research.id).aupdate(
                status="answered", answered_at=timezone.now())
        await ex.resume_targeted(ResumeTarget(research.run_id, interrupt_id=research.id),
                                 "accept")
        await ex.cancel(result.thread_id)
        return result.thread_id

    @pytest.mark.parametrize("answered_by_person", [False, True])
    async def test_planned_and_reading_saves_leave_the_same_rows(
        self, store: DjangoCheckpointStore, monkeypatch: pytest.MonkeyPatch,
        answered_by_person: bool,
    ) -> None:
        planned = await self.snapshot(await self.supervise(store, answered_by_person))
        reading_calls: list[Checkpoint] = []
        monkeypatch.setattr("forgeui.store.plan_save",
                            lambda cp: reading_calls.append(cp) and None)
        reading = await self.snapshot(await self.supervise(store, answered_by_person))
        assert len(reading_calls) >= 8, "the reading path was not taken"
        assert planned == reading
        answered = [e for e in planned["events"] if e[0] == "interrupt.answered"]
        assert len(answered) == (0 if answered_by_person else 1)

    async def test_a_person_answer_is_never_reported_twice(
        self, store: DjangoCheckpointStore,
    ) -> None:
        thread = await self.supervise(store, answered_by_person=True)
        rows = await self.snapshot(thread)
        # The person's answer had no event from the store (the dashboard announces its own);
        # the runtime's later close moved nothing, so it announced nothing either.
        assert [k for k, *_ in rows["events"]].count("interrupt.answered") == 0
        assert [k for k, *_ in rows["events"]].count("interrupt.cancelled") == 1
        assert sorted(s for _, s, *_ in rows["interrupts"]) == ["answered", "cancelled"]

    async def test_a_lost_compare_and_set_writes_nothing(
        self, store: DjangoCheckpointStore,
    ) -> None:
        first = make_checkpoint("t-plan", None, run_id="r-plan", interrupts=[])
        await store.save(first)
        winner = make_checkpoint("t-plan", first.id, run_id="r-plan", status="running")
        loser = make_checkpoint("t-plan", first.id, run_id="r-plan", status="completed")
        assert saveplan.plan_save(loser) is not None  # this is the planned path
        await store.save(winner)
        events = await Event.objects.using(self.alias).acount()
        with pytest.raises(CheckpointConflict) as lost:
            await store.save(loser)
        assert lost.value.latest == winner.id
        assert (await Run.objects.using(self.alias).aget(pk="r-plan")).status == "running"
        assert await Event.objects.using(self.alias).acount() == events
        assert await CheckpointRow.objects.using(self.alias).filter(
            thread_id="t-plan").acount() == 2

    def test_inside_a_callers_transaction_a_save_rolls_back_with_it(
        self, store: DjangoCheckpointStore,
    ) -> None:
        first = make_checkpoint("t-outer", None, run_id="r-outer", interrupts=[])
        store.save_sync(first)
        events = Event.objects.using(self.alias).count()
        second = make_checkpoint("t-outer", first.id, run_id="r-outer", status="completed")
        with pytest.raises(RuntimeError), transaction.atomic(using=self.alias):
            store.save_sync(second)
            assert store.load_sync("t-outer").id == second.id  # visible inside
            raise RuntimeError("the caller changes its mind")
        assert store.load_sync("t-outer").id == first.id
        assert Run.objects.using(self.alias).get(pk="r-outer").status == "interrupted"
        assert Event.objects.using(self.alias).count() == events


    @contextmanager
    def run_writes(self) -> Iterator[list[str]]:
        """How each save meanwhile wrote the run's row: "update" in place or "upsert"."""
        sent: list[str] = []
        connection = connections[self.alias]
        connection.ensure_connection()
        table = f'"{Run._meta.db_table}"'

        def seen(sql: str) -> None:
            if f"INSERT INTO {table}" in sql:
                sent.append("upsert")
            elif f"UPDATE {table}" in sql:
                sent.append("update")

        if connection.vendor == "sqlite":
            connection.connection.set_trace_callback(seen)
            try:
                yield sent
            finally:
                connection.connection.set_trace_callback(None)
            return

        def wrapper(execute: Any, sql: str, *args: Any) -> Any:
            seen(sql)
            return execute(sql, *args)

        with connection.execute_wrapper(wrapper):
            yield sent

    def test_a_runs_row_is_updated_in_place_once_this_process_saved_it(
        self, store: DjangoCheckpointStore,
    ) -> None:
        chain: list[Checkpoint] = []
        with self.run_writes() as sent:
            for run_id in ("r-a", "r-a", "r-b", "r-b"):  # a second run on the same thread
                chain.append(make_checkpoint("t-rows", chain[-1].id if chain else None,
                                             run_id=run_id, interrupts=[], status="running"))
                store.save_sync(chain[-1])
        assert sent == ["upsert", "update", "upsert", "update"]
        rows = Run.objects.using(self.alias)
        assert rows.get(pk="r-a").latest_checkpoint_id == chain[1].id
        assert rows.get(pk="r-b").latest_checkpoint_id == chain[3].id
        assert store.load_run_sync("r-a") == chain[1]

    def test_a_runs_row_deleted_meanwhile_is_made_again(
        self, store: DjangoCheckpointStore,
    ) -> None:
        first = make_checkpoint("t-gone", None, run_id="r-gone", interrupts=[])
        store.save_sync(first)
        Run.objects.using(self.alias).filter(pk="r-gone").delete()
        second = make_checkpoint("t-gone", first.id, run_id="r-gone", interrupts=[],
                                 status="completed")
        with self.run_writes() as sent:
            store.save_sync(second)
        assert sent[0] == "update" and "upsert" in sent
        row = Run.objects.using(self.alias).get(pk="r-gone")
        assert (row.status, row.latest_checkpoint_id) == ("completed", second.id)
        assert store.load_run_sync("r-gone") == second


class TestPlannedSaveOnSQLite(PlannedSave):
    pytestmark = pytest.mark.django_db(transaction=True, databases=["sqlite"])
    alias = "sqlite"


class TestPlannedSaveOnPostgres(PlannedSave):
    pytestmark = [pytest.mark.postgres,
                  pytest.mark.django_db(transaction=True, databases=["postgres"])]
    alias = "postgres"


def sent(value: Any) -> Any:
    """What a prepared value puts on the wire: a ``Jsonb`` by the JSON it dumps to."""
    if isinstance(value, Jsonb):
        return ("jsonb", json.loads((value.dumps or json.dumps)(value.obj)))
    return value


@pytest.mark.parametrize("alias", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.django_db(transaction=True, databases=["sqlite", "postgres"])
def test_values_are_the_ones_the_orm_would_send(alias: str) -> None:
    connection = connections[alias]
    cp = make_checkpoint("t-val", None, run_id="r-val", metadata={"started_by": None})
    plan = saveplan.plan_save(cp)
    assert plan is not None and plan.created
    now = timezone.now()
    rows: list[tuple[Any, dict[str, Any]]] = [
        (CheckpointRow, _checkpoint_row(cp)), (Run, run_row(cp)), (Interrupt, plan.created[0]),
        (Event, savesql.event_row(EventDraft("run.updated", "r", "t", "", {"a": [1]}), now)),
    ]
    elsewhere = savesql.event_row(EventDraft("run.updated"),
                                  now.astimezone(timezone.get_fixed_timezone(90)))
    rows.append((Event, elsewhere))  # not UTC: the shortcut must hand over to the ORM's way
    on_the_second = savesql.event_row(EventDraft("run.updated"), now.replace(microsecond=0))
    rows.append((Event, on_the_second))  # no fraction written, as the ORM writes none
    for model, values in rows:
        fast = savesql.fast_values(model, values, connection)
        assert [sent(v) for v in fast] == [sent(v) for v in fastsql.prepare(
            model, values, connection)], model.__name__
    assert len(EVENT_COLUMNS) == len(rows[-3][1])
    # The checkpoint's JSON, dumped once (the store remembers it too), goes as it is.
    row = _checkpoint_row(cp, savesql.DumpedJson(cp.to_json()))
    assert list(row)[-1] == "data"
    dumped = savesql.fast_values(CheckpointRow, row, connection)
    orm = fastsql.prepare(CheckpointRow, _checkpoint_row(cp), connection)
    assert [sent(v) for v in dumped[:-1]] == [sent(v) for v in orm[:-1]]
    said = [sent(v) if alias == "postgres" else ("jsonb", json.loads(v))
            for v in (dumped[-1], orm[-1])]
    assert said[0] == said[1] == ("jsonb", cp.to_dict())


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_postgres_saves_and_loads_are_prepared_once_per_connection() -> None:
    store = DjangoCheckpointStore("postgres")
    chain = [make_checkpoint("t-prep", None, run_id="r-prep", interrupts=[])]
    store.save_sync(chain[0])
    for _ in range(4):
        chain.append(make_checkpoint("t-prep", chain[-1].id, run_id="r-prep", interrupts=[]))
        store.save_sync(chain[-1])
        assert store.load_sync("t-prep").id == chain[-1].id  # type: ignore[union-attr]
    with connections["postgres"].cursor() as cursor:  # the same session as the store's
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert sum(s.startswith("WITH moved AS (UPDATE") for s in prepared) == 1, prepared
    assert sum(s.startswith('SELECT "data"') for s in prepared) == 1, prepared


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_postgres_save_statements_are_converted_once_past_psycopgs_cache_limits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A start's save (interrupt and event rows) is over psycopg's 4 KB / 50 values limit
    for caching its placeholder conversion; the store's cursor keeps it all the same."""
    assert fastsql.SaveCursor is not psycopg.Cursor, "this psycopg hides PostgresQuery"
    converted: list[bytes] = []
    convert = psycopg._queries._query2pg_nocache

    def counting(query: bytes, encoding: str) -> Any:
        converted.append(query)
        return convert(query, encoding)

    monkeypatch.setattr(psycopg._queries, "_query2pg_nocache", counting)
    monkeypatch.setattr(fastsql, "_converted", {})  # as if new: other tests filled it
    store = DjangoCheckpointStore("postgres")
    for i in range(3):
        cp = make_checkpoint(f"t-conv{i}", None, run_id=f"r-conv{i}",
                             metadata={"started_by": None})
        plan = saveplan.plan_save(cp)
        assert plan is not None and plan.created and plan.events
        store.save_sync(cp)
        assert store.load_sync(f"t-conv{i}") == cp
    saves = [q for q in converted if q.startswith(b"WITH moved AS")]
    assert len(saves) == 1, [q[:60] for q in converted]
    limits = psycopg._queries  # why psycopg would have converted it on every save
    assert (len(saves[0]) > limits.MAX_CACHED_STATEMENT_LENGTH
            or saves[0].count(b"%s") > limits.MAX_CACHED_STATEMENT_PARAMS)


def _indexes_scanned(plan: Any, table: str) -> list[str]:
    """The index each scan of ``table`` in an ``EXPLAIN (FORMAT JSON)`` plan goes through."""
    found = []
    if plan.get("Relation Name") == table and "Scan" in plan.get("Node Type", ""):
        found.append(plan.get("Index Name", "(no index)"))
    for child in plan.get("Plans", []):
        found += _indexes_scanned(child, table)
    return found


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_postgres_closing_an_interrupt_finds_it_by_primary_key_in_a_generic_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The save is prepared, so after five runs PostgreSQL plans it once for any values.
    Made before the table is analysed, that plan must still find the closed interrupt by
    its key: through an index led by ``status`` it walked every pending interrupt."""
    store = DjangoCheckpointStore("postgres")
    ex = DurableExecutor([("ask", lambda data, ctx: {"answer": ctx.interrupt("ok?")}),
                          ("end", lambda data: {**data, "done": True})],
                         store=store, name="closing-plan")
    paused = [ex.run_sync({}) for _ in range(40)]
    sent_sql: list[tuple[str, list[Any]]] = []
    prepared = fastsql.prepared_fetchone

    def watch(connection: Any, sql: str, params: Any) -> Any:
        sent_sql.append((sql, list(params)))
        return prepared(connection, sql, params)

    monkeypatch.setattr(fastsql, "prepared_fetchone", watch)
    assert ex.resume_sync(paused[0].thread_id, "yes").output["done"]
    closing = [(sql, params) for sql, params in sent_sql if " closed0 AS (" in sql]
    assert len(closing) == 1, [sql[:80] for sql, _ in sent_sql]
    sql, params = closing[0]
    numbers = iter(range(1, len(params) + 1))
    with connections["postgres"].cursor() as cursor:
        cursor.execute("PREPARE closing AS " + re.sub("%s", lambda _: f"${next(numbers)}", sql))
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        try:
            values = ", ".join(["%s"] * len(params))
            cursor.execute(f"EXPLAIN (FORMAT JSON) EXECUTE closing({values})", params)
            plan = cursor.fetchone()[0][0]["Plan"]
        finally:
            cursor.execute("RESET plan_cache_mode")
            cursor.execute("DEALLOCATE closing")
    assert _indexes_scanned(plan, Interrupt._meta.db_table) == ["forgeui_interrupt_pkey"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_postgres_compresses_a_large_checkpoint_with_lz4() -> None:
    """pglz, the default, was a tenth of a save's time on the server (migration 0011)."""
    store = DjangoCheckpointStore("postgres")
    cp = make_checkpoint("t-lz4", None, run_id="r-lz4", interrupts=[],
                         state={"notes": [f"note {i} " * 8 for i in range(60)]})
    store.save_sync(cp)
    assert store.load_sync("t-lz4") == cp
    with connections["postgres"].cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(data), octet_length(data::text)"
                       " FROM forgeui_checkpoint WHERE id = %s", [cp.id])
        method, size = cursor.fetchone()
    assert size > 4000, "too small to be compressed at all"
    assert method == "lz4"
