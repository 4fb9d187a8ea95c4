"""``GET /metrics``: Prometheus' text format for a scraper holding the metrics token."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from forgeui.models import Interrupt
from forgeui.runs import services

TOKEN = "scrape-" + "t" * 30


def scrape(token: str = TOKEN) -> tuple[int, str]:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, response.content.decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_are_off_without_a_token_and_refused_with_a_wrong_one(
        users: dict[str, User]) -> None:
    assert scrape()[0] == 404
    with override_settings(FORGE_METRICS_TOKEN=TOKEN):
        assert scrape("wrong")[0] == 401
        assert Client().get("/metrics").status_code == 401
        assert scrape()[0] == 200


@override_settings(FORGE_METRICS_TOKEN=TOKEN)
def test_pending_interrupts_decisions_and_resumes_per_graph(users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "race", {"amount": 1, "ledger": "/dev/null"})
    found = samples(scrape()[1])
    assert found[("forge_pending_interrupts", (("graph", "race"),))] == 1
    assert found[("forge_runs", (("graph", "race"), ("status", "interrupted")))] == 1

    pending = Interrupt.objects.of_tree(run.thread_id).pending().get()
    services.answer_interrupt(users["reviewer"], pending.pk, True)
    found = samples(scrape()[1])
    assert ("forge_pending_interrupts", (("graph", "race"),)) not in found
    assert found[("forge_resumes_total", (("graph", "race"),))] == 1
    assert found[("forge_decision_seconds_count", (("graph", "race"),))] == 1
    assert found[("forge_decision_seconds_sum", (("graph", "race"),))] >= 0
    assert found[("forge_runs", (("graph", "race"), ("status", "completed")))] == 1
