"""The demo's LangGraph graph: a support agent written for LangGraph alone, whose tool
calls wait for a reviewer as ``HumanInTheLoopMiddleware`` has them wait.

Nothing here knows forge: ``FORGE_GRAPHS = {"refund_agent":
"forgeui.demo.langgraph_agent:refund_agent"}`` registers it. Deterministic, no model.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class Ticket(TypedDict, total=False):
    customer: str
    order: str
    amount: int
    tool_calls: list[dict[str, Any]]
    done: Annotated[list[str], operator.add]


def plan(ticket: Ticket) -> dict[str, Any]:
    """What a model would propose: refund the order, then tell the customer."""
    return {"tool_calls": [
        {"name": "issue_refund", "args": {"order": ticket["order"], "amount": ticket["amount"]}},
        {"name": "send_email", "args": {"to": ticket["customer"],
                                        "body": f"Your refund for {ticket['order']} is on "
                                                f"its way."}},
    ]}


def review(ticket: Ticket) -> dict[str, Any]:
    """Pause for a person, in the middleware's shape; carry out what they decided."""
    calls = ticket["tool_calls"]
    answer = interrupt({
        "action_requests": [{**call, "description": f"The agent wants to call "
                                                    f"`{call['name']}`."} for call in calls],
        "review_configs": [
            {"action_name": "issue_refund", "allowed_decisions": ["approve", "edit", "reject"]},
            {"action_name": "send_email",
             "allowed_decisions": ["approve", "edit", "reject", "respond"]}],
    })
    done = []
    for call, decision in zip(calls, answer["decisions"], strict=True):
        if decision["type"] == "edit":
            done.append(f"{call['name']} {decision['edited_action']['args']}")
        elif decision["type"] == "approve":
            done.append(f"{call['name']} {call['args']}")
        else:
            done.append(f"skipped {call['name']}: {decision.get('message', '')}")
    return {"done": done}


def build() -> StateGraph:
    graph = StateGraph(Ticket)
    graph.add_node("plan", plan)
    graph.add_node("review", review)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "review")
    graph.add_edge("review", END)
    return graph


refund_agent = build().compile()
