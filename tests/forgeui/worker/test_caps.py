"""A capped graph's jobs share ``cap`` lanes (procrastinate locks); a run keeps its lane."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import override_settings

from forgeui.models import Interrupt
from forgeui.runs import services
from forgeui.worker.caps import lock_for


@override_settings(FORGE_GRAPH_CAPS={"race": 3})
def test_a_capped_graphs_runs_fill_at_most_cap_lanes(users: dict[str, User]) -> None:
    lanes = {lock_for("start_run_task", ["race", f"thread-{n}", {}]) for n in range(60)}
    assert lanes == {"forge-cap:race:0", "forge-cap:race:1", "forge-cap:race:2"}
    assert lock_for("start_run_task", ["gated", "thread-1", {}]) is None
    assert lock_for("apply_steering_task", [1]) is None


@override_settings(FORGE_GRAPH_CAPS={"race": 3})
def test_an_answer_and_a_recovery_queue_in_their_runs_lane(users: dict[str, User]) -> None:
    run = services.start_run(users["supervisor"], "race", {"amount": 1, "ledger": "/dev/null"})
    lane = lock_for("start_run_task", ["race", run.thread_id, {}])
    pending = Interrupt.objects.of_tree(run.thread_id).pending().get()
    services.answer_interrupt(users["reviewer"], pending.pk, True)
    answer = pending.answers.get()
    assert lane is not None
    assert lock_for("apply_answer_task", [answer.pk]) == lane
    assert lock_for("recover_run_task", [run.thread_id]) == lane
