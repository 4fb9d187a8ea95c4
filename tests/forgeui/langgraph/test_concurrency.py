"""Answers to parallel interrupts applied at the same moment by two workers: each call on
the thread waits for the other, so neither answer is lost."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from forgeui.langgraph.locks import thread_lock
from forgeui.runs import registry
from runtime import Command, ResumeTarget


@pytest.mark.django_db(transaction=True)
def test_two_workers_answering_at_once_lose_nothing() -> None:
    executor = registry.get_executor("lg_parallel")
    started = executor.run_sync({"log": []})
    assert len(started.interrupts) == 2
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def apply(interrupt_id: str, value: str) -> None:
        try:
            barrier.wait(timeout=30)
            executor.resume_targeted_sync(ResumeTarget(run_id=started.run_id,
                                                       interrupt_id=interrupt_id),
                                          Command(resume=value))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=apply, args=(i.id, i.node.upper()))
               for i in started.interrupts]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert errors == []
    latest = executor.store.load_sync(started.thread_id)
    assert latest is not None and latest.status == "completed"
    assert latest.output == {"log": ["left=LEFT", "right=RIGHT", "joined"]}


@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
@pytest.mark.parametrize("alias", ["default", "postgres"])
def test_the_thread_lock_admits_one_holder_at_a_time(alias: str) -> None:
    held: list[tuple[str, float, float]] = []

    def hold(name: str) -> None:
        try:
            with thread_lock("one-thread", using=alias):
                began = time.monotonic()
                time.sleep(0.3)
                held.append((name, began, time.monotonic()))
        finally:
            connections.close_all()

    workers = [threading.Thread(target=hold, args=(name,)) for name in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert len(held) == 2
    first, second = sorted(held, key=lambda h: h[1])
    assert second[1] >= first[2]  # the second began only after the first let go
    assert connections[alias].vendor in ("sqlite", "postgresql")
