"""Structured JSON logs: one object per line, run ids on every line about a run."""

from __future__ import annotations

import io
import json
import logging
import secrets
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User

from forgeui.models import Interrupt
from forgeui.runs import logs, services
from tests.forgeui.conftest import ROOT


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """What forgeui logs, through the production handler's formatter and filter."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.RunFilter())
    logger = logging.getLogger("forgeui")
    logger.addHandler(handler)
    try:
        yield out
    finally:
        logger.removeHandler(handler)


def parsed(out: io.StringIO) -> list[dict[str, str]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.django_db(transaction=True)
def test_applying_an_answer_logs_json_lines_naming_the_run(
        users: dict[str, User], json_lines: io.StringIO) -> None:
    run = services.start_run(users["supervisor"], "transfer", {})
    interrupt = Interrupt.objects.of_tree(run.thread_id).pending().get()
    services.answer_interrupt(users["reviewer"], interrupt.pk, {"ok": True})  # task runs now
    lines = [line for line in parsed(json_lines) if line["logger"] == "forgeui.runs.tasks"]
    assert lines, json_lines.getvalue()
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys()
        assert line["run_id"] == interrupt.run_id and line["thread_id"] == interrupt.thread_id
        assert line["interrupt_id"] == interrupt.pk
    assert any(line["message"].endswith(": applied") and line["level"] == "INFO"
               for line in lines)


def test_extra_ids_win_over_the_context_and_tracebacks_stay_on_one_line(
        json_lines: io.StringIO) -> None:
    logger = logging.getLogger("forgeui.tests")
    with logs.about(run_id="r1", thread_id="t1"):
        logger.warning("explicit", extra={"run_id": "r2", "interrupt_id": "i2"})
        try:
            raise ValueError("boom\nsecond line")
        except ValueError:
            logger.exception("failed")
    logger.warning("outside")
    explicit, failed, outside = parsed(json_lines)
    assert (explicit["run_id"], explicit["thread_id"], explicit["interrupt_id"]) == (
        "r2", "t1", "i2")
    assert failed["run_id"] == "r1" and "ValueError: boom" in failed["exc"]
    assert "run_id" not in outside
    assert len(json_lines.getvalue().splitlines()) == 3


EMIT = """
import logging, django
django.setup()
from forgeui.runs import logs
with logs.about(run_id="r1", thread_id="t1", interrupt_id="i1"):
    logging.getLogger("forgeui.runs.tasks").info("about a run")
logging.getLogger("django.request").warning("not forge's")
"""


@pytest.mark.parametrize("env", [{"DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50)},
                                 {"FORGE_LOG_FORMAT": "json"}])
def test_production_logs_json_from_every_logger(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EMIT], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
             "DJANGO_SETTINGS_MODULE": "forgeui.settings", **env})
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stderr.splitlines())
    assert first["message"] == "about a run" and first["level"] == "INFO"
    assert (first["run_id"], first["thread_id"], first["interrupt_id"]) == ("r1", "t1", "i1")
    assert second["logger"] == "django.request" and "run_id" not in second
