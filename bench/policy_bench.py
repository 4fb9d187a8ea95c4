"""What an approval policy adds to an answer, on ``DjangoCheckpointStore``.

    python bench/policy_bench.py [--db sqlite|postgres] [--answers 200]

Times ``services.answer_interrupt`` (validate, check the role, record in one transaction)
on interrupts no policy covers and on interrupts a one-approval policy covers, taking
turns so load from anything else falls on both; the difference is what the policy check
adds (target: under 5 ms). Also timed: the check alone (which policy covers it, may this
person count, what the answer counts as), and both approvals of a two-approval policy:
the first is counted and leaves the interrupt pending, the second meets the policy; and
the statements each runs. Tasks are not run: applying the answer is the same with a
policy or without. PostgreSQL uses the database ``forge_bench`` on 127.0.0.1
(``FORGE_BENCH_DB`` names another), created fresh.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

POLICIES = {"one": {"nodes": ["bench_one/ask"], "approvals": 1, "groups": ["finance"]},
            "two": {"nodes": ["bench_two/ask"], "approvals": 2, "groups": ["finance"]}}


def ask(order: dict[str, Any], ctx: Any) -> Any:
    return ctx.interrupt({"question": "Pay?", "amount": order.get("amount")})


def executor(name: str) -> Any:
    from runtime import DurableExecutor

    return DurableExecutor(nodes=[("ask", ask)], name=name)


def bench_plain() -> Any:
    return executor("bench_plain")


def bench_one() -> Any:
    return executor("bench_one")


def bench_two() -> Any:
    return executor("bench_two")


def set_up(db: str) -> tuple[Any, Any]:
    os.environ["FORGE_GRAPHS"] = json.dumps({name: f"policy_bench:{name}" for name in (
        "bench_plain", "bench_one", "bench_two")})
    os.environ["FORGE_POLICIES"] = json.dumps(POLICIES)
    from store_vs_langgraph import django_on_fresh

    django_on_fresh(db)
    from django.conf import settings
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    settings.DEBUG = False  # as deployed: DEBUG logs every statement
    # Recorded, never run: applying an answer costs the same with a policy or without.
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    call_command("migrate", verbosity=0)
    finance = Group.objects.create(name="finance")
    starter = User.objects.create_user("starter")
    approvers = [User.objects.create_user(name) for name in ("approver", "second")]
    for approver in approvers:
        approver.groups.add(Group.objects.get(name="reviewer"), finance)
    return starter, approvers


def paused(graph: str, n: int, starter: Any) -> list[str]:
    from forgeui.runs import registry

    ex = registry.get_executor(graph)
    return [ex.run_sync({"amount": i}, metadata={"started_by": starter.pk,
                                                 "registered_as": graph}).interrupts[0].id
            for i in range(n)]


def timed(fn: Callable[[str], Any], ids: list[str]) -> list[float]:
    spent = []
    for interrupt_id in ids:
        t0 = time.perf_counter()
        fn(interrupt_id)
        spent.append((time.perf_counter() - t0) * 1000)
    return spent


def counted_statements(fn: Callable[[str], Any], interrupt_id: str) -> int:
    """The SQL statements one answer runs (a figure the machine's load cannot blur)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        fn(interrupt_id)
    return len(captured.captured_queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    starter, (approver, second) = set_up(args.db)
    from forgeui.models import Interrupt
    from forgeui.runs import services
    from forgeui.runs.policies import approvals, votes

    def answer(interrupt_id: str) -> Any:
        return services.answer_interrupt(approver, interrupt_id, True)

    def meet(interrupt_id: str) -> Any:
        return services.answer_interrupt(second, interrupt_id, True)

    def check(interrupt_id: str) -> Any:
        interrupt = Interrupt.objects.select_related("run").get(pk=interrupt_id)
        t0 = time.perf_counter()
        policy = approvals.policy_for(interrupt)
        assert policy is not None
        assert approvals.why_not_counted(policy, approver, interrupt) is None
        assert votes.vote_of(policy, interrupt, True) is not None
        return time.perf_counter() - t0

    per = max(1, args.answers // args.rounds)
    plain: list[float] = []
    covered: list[float] = []
    counted: list[float] = []
    met: list[float] = []
    for _ in range(args.rounds):
        plain += timed(answer, paused("bench_plain", per, starter))
        covered += timed(answer, paused("bench_one", per, starter))
        two = paused("bench_two", per, starter)
        counted += timed(answer, two)
        met += timed(meet, two)
    statements = {name: counted_statements(fn, paused(graph, 1, starter)[0])
                  for name, graph, fn in (("plain", "bench_plain", answer),
                                          ("one", "bench_one", answer))}
    first_of_two = paused("bench_two", 1, starter)[0]
    statements["first"] = counted_statements(answer, first_of_two)
    statements["meets"] = counted_statements(meet, first_of_two)
    checks = [check(i) * 1000 for i in paused("bench_two", per, starter)]
    assert Interrupt.objects.filter(run__graph="bench_two").pending().count() == per
    print(f"statements per answer: no policy {statements['plain']}, one-approval policy "
          f"{statements['one']}, first of two {statements['first']}, the one that meets two "
          f"{statements['meets']}")
    added = statistics.median(covered) - statistics.median(plain)
    recorded = statistics.median(met) - statistics.median(plain)
    print(f"{args.db}: {len(plain)} answers each way")
    print(f"  answer, no policy             median {statistics.median(plain):7.2f} ms")
    print(f"  answer, one-approval policy   median {statistics.median(covered):7.2f} ms")
    print(f"  first of two approvals        median {statistics.median(counted):7.2f} ms "
          f"(counted; the interrupt stays pending)")
    print(f"  the approval that meets two   median {statistics.median(met):7.2f} ms "
          f"(adds {recorded:.2f} ms: the row lock, the count, its row and audit row)")
    print(f"  the policy check alone        median {statistics.median(checks):7.2f} ms")
    print(f"policy check adds {added:.2f} ms to an answer (target < 5 ms): "
          f"{'met' if added < 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
