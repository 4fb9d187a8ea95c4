"""Graphs the forgeui tests register (see ``tests.settings.FORGE_GRAPHS``).

Side effects go to files named in the run's input, so a test can count them across
threads, processes and a SIGKILL.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from runtime import DurableExecutor, NodeContext


def append_line(path: str, line: str) -> int:
    """Append one line (O_APPEND: whole lines even from several processes); the count."""
    with open(path, "a", encoding="utf-8") as ledger:
        ledger.write(line + "\n")
    return len(Path(path).read_text(encoding="utf-8").splitlines())


def ask(order: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    return {**order, "answer": ctx.interrupt({"question": "Pay?", "amount": order.get("amount")})}


def pay(order: dict[str, Any]) -> dict[str, Any]:
    """Deliberately not idempotent: the race test counts how often it ran."""
    append_line(order["ledger"], f"paid {order.get('amount')} answer={order['answer']}")
    return {**order, "paid": True}


race = DurableExecutor(nodes=[("ask", ask), ("pay", pay)], name="race")


def ask_then_pay(order: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Ask; with the answer, say so, block until the test opens the gate (or kills us),
    then pay: code after ``interrupt()`` runs before the node's checkpoint."""
    answer = ctx.interrupt({"question": "Pay?", "amount": order.get("amount")})
    append_line(order["entered"], "entered")
    while not Path(order["gate"]).exists():
        time.sleep(0.05)
    return pay({**order, "answer": answer})


gated = DurableExecutor(nodes=[("ask_then_pay", ask_then_pay)], name="gated")
# The same, one level down: the node that works after the answer is a sub-agent's.
gated_team = DurableExecutor(
    nodes=[("intake", lambda order: order),
           ("payer", DurableExecutor(nodes=[("ask_then_pay", ask_then_pay)], name="payer"))],
    name="gated_team")


def legal(order: dict[str, Any], ctx: NodeContext) -> Any:
    return ctx.interrupt({"question": "Legal sign-off?"})


def finance(order: dict[str, Any], ctx: NodeContext) -> Any:
    return ctx.interrupt({"question": "Finance sign-off?",
                          "answer_schema": {"type": "object", "required": ["approved"]}})


def record(signoffs: dict[str, Any]) -> dict[str, Any]:
    return {"signoffs": signoffs}


parallel = DurableExecutor(
    nodes=[("start", lambda order: order), ("legal", legal), ("finance", finance),
           ("record", record)],
    edges={"start": lambda _: ["legal", "finance"], "legal": lambda _: "record",
           "finance": lambda _: "record"},
    name="parallel",
)


def charge_then_wait(order: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Charge once, then block until the test releases the gate (or kills us)."""
    receipt = ctx.once("charge", lambda: {"charged": append_line(order["ledger"], "charged")})
    append_line(order["entered"], "entered")
    while not Path(order["gate"]).exists():
        time.sleep(0.05)
    return {**order, **receipt}


def finish(order: dict[str, Any]) -> dict[str, Any]:
    return {**order, "finished": True}


blocking = DurableExecutor(nodes=[("prepare", lambda order: order),
                                  ("charge", charge_then_wait), ("finish", finish)],
                           name="blocking")


def straight(order: dict[str, Any]) -> dict[str, Any]:
    return {**order, "step": "one"}


def make_pipeline() -> DurableExecutor:
    """A factory entry in FORGE_GRAPHS: called once by the registry."""
    return DurableExecutor(nodes=[("one", straight), ("two", finish)], name="pipeline")


def ask_as_told(order: dict[str, Any], ctx: NodeContext) -> Any:
    """Pause with the payload the input asks for (search terms, forwarded data) and the
    control options it asks for (``deadline_s``, ``default``, ``assignees``)."""
    return ctx.interrupt({"question": order.get("question", "Approve?"),
                          **order.get("payload", {})}, **order.get("options", {}))


custom = DurableExecutor(nodes=[("ask", ask_as_told)], name="custom")


def broken_factory() -> DurableExecutor:
    """A factory that fails the way a graph needing a missing secret would."""
    raise RuntimeError("no credentials for the model provider")


def fetch(order: dict[str, Any]) -> dict[str, Any]:
    """Fails while the file ``order["fail_while"]`` exists: an outage that ends."""
    if os.path.exists(order["fail_while"]):
        raise RuntimeError("upstream unavailable")
    return {**order, "fetched": True}


flaky = DurableExecutor(nodes=[("fetch", fetch), ("finish", finish)], name="flaky")


def talk(conversation: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """One turn of a conversation that goes on as long as a person answers."""
    said = ctx.interrupt({"question": "Next message?", "turn": len(conversation["messages"])})
    return {"messages": [*conversation["messages"], {"role": "user", "content": said}]}


chat = DurableExecutor(nodes=[("talk", talk)], edges={"talk": lambda out, ctx=None: "talk"},
                       name="chat")


def package(release: dict[str, Any]) -> dict[str, Any]:
    return {**release, "artifact": f"app-{release.get('version', '1.0.0')}.tar.gz"}


def ship(built: dict[str, Any]) -> dict[str, Any]:
    """The guarded side effect: a line in the ledger the input names."""
    append_line(built["ledger"], f"shipped {built['artifact']}")
    return {**built, "shipped": True}


guarded = DurableExecutor(nodes=[("package", package), ("ship", ship)],
                          interrupt_before=["ship"], name="guarded")


def review_payment(order: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Large payments wait for finance; the graph approves small ones itself."""
    if order["amount"] < 1000:
        return {**order, "approved": True}
    answer = ctx.interrupt({"question": "Pay?", "amount": order["amount"]},
                           assignees={"groups": ["finance"]})
    return {**order, "approved": answer}


def pay_if_approved(order: dict[str, Any]) -> dict[str, Any]:
    if order["approved"] is True:
        append_line(order["ledger"], f"paid {order['amount']}")
    return order


payment = DurableExecutor(
    nodes=[("review", review_payment), ("pay", pay_if_approved)], name="payment",
    input_schema={"type": "object", "required": ["amount", "ledger"],
                  "properties": {"amount": {"type": "integer", "minimum": 1},
                                 "ledger": {"type": "string"}}})


def sign(order: Any, ctx: NodeContext) -> dict[str, Any]:
    """One sign-off, with the notes this task was given."""
    return {"answer": ctx.interrupt({"question": f"{ctx.node} sign-off?"}),
            "steering": ctx.steering}


signoffs = DurableExecutor(
    nodes=[("start", lambda order: order), ("legal", sign), ("finance", sign),
           ("record", record)],
    edges={"start": lambda _: ["legal", "finance"], "legal": lambda _: "record",
           "finance": lambda _: "record"},
    name="signoffs",
)


def sign_off(order: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Pause once with the payload the input gives (it may try to name its own policy);
    hand on the answer and what was recorded beside it (who approved)."""
    answer = ctx.interrupt({"question": "Sign off?", **order.get("payload", {})})
    return {"answer": answer, "meta": ctx.answer_metadata(), "runs": append_line(
        order["ledger"], f"signed {answer}") if order.get("ledger") else 0}


signoff = DurableExecutor(nodes=[("sign", sign_off)], name="signoff")
