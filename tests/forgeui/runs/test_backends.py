"""The embedded default's task backend: enqueue returns before the task runs."""

from __future__ import annotations

import threading

import pytest
from django.test import override_settings
from django_tasks import TaskResultStatus, task

from forgeui.runs.backends import wait_for_tasks

release = threading.Event()
ran: list[str] = []


@task()
def blocked_task(tag: str) -> str:
    release.wait(10)
    ran.append(tag)
    return tag


@pytest.fixture
def thread_pool() -> object:
    with override_settings(TASKS={"default": {"BACKEND": "forgeui.runs.backends.ThreadPoolBackend",
                                              "OPTIONS": {"WORKERS": 2}}}):
        yield
    release.set()
    wait_for_tasks(10)


@pytest.mark.usefixtures("thread_pool")
def test_enqueue_returns_at_once_and_the_task_runs_beside() -> None:
    release.clear()
    ran.clear()
    result = blocked_task.enqueue("first")
    assert ran == []  # the caller did not wait for the task
    assert result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING)
    release.set()
    wait_for_tasks(10)
    assert ran == ["first"] and result.status == TaskResultStatus.SUCCESSFUL
