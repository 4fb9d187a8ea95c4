"""LangGraph graphs as a team writes them, with no forge in sight: each is registered in
the test settings' ``FORGE_GRAPHS`` and also run straight on LangGraph's own saver."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _asker(question: str) -> Any:
    def ask(state: Log) -> dict[str, Any]:
        return {"log": [f"{question}={interrupt({'question': question})}"]}
    return ask


def _twice(state: Log) -> dict[str, Any]:
    first = interrupt({"question": "amount?"})
    second = interrupt({"question": f"pay {first}?"})
    return {"log": [f"amount={first}", f"approved={second}"]}


def two_interrupts() -> StateGraph:
    """One node asking twice, then a second node asking once more: a builder."""
    graph = StateGraph(Log)
    graph.add_node("twice", _twice)
    graph.add_node("confirm", _asker("confirm"))
    graph.add_edge(START, "twice")
    graph.add_edge("twice", "confirm")
    graph.add_edge("confirm", END)
    return graph


def parallel() -> StateGraph:
    """Two branches of one step, each pausing: two interrupts pending at once."""
    graph = StateGraph(Log)
    graph.add_node("left", _asker("left"))
    graph.add_node("right", _asker("right"))
    graph.add_node("join", lambda state: {"log": ["joined"]})
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge(["left", "right"], "join")
    graph.add_edge("join", END)
    return graph


def subgraph() -> StateGraph:
    """A compiled subgraph as a node; its interrupt lives in its own namespace."""
    inner = StateGraph(Log)
    inner.add_node("review", _asker("review"))
    inner.add_edge(START, "review")
    graph = StateGraph(Log)
    graph.add_node("prepare", lambda state: {"log": ["prepared"]})
    graph.add_node("team", inner.compile())
    graph.add_node("finish", _asker("finish"))
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "team")
    graph.add_edge("team", "finish")
    graph.add_edge("finish", END)
    return graph


def breakpoint_graph() -> StateGraph:
    graph = StateGraph(Log)
    graph.add_node("draft", lambda state: {"log": ["drafted"]})
    graph.add_node("send", lambda state: {"log": ["sent"]})
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "send")
    graph.add_edge("send", END)
    return graph


def breakpoint_compiled(checkpointer: Any = None) -> Any:
    """Compiled with ``interrupt_before``, as registered: forge keeps the breakpoint."""
    return breakpoint_graph().compile(checkpointer=checkpointer, interrupt_before=["send"])


class Mail(TypedDict):
    to: str
    body: str
    outcome: str


def _agent_inbox(state: Mail) -> dict[str, Any]:
    request = {"action_request": {"action": "send_email",
                                  "args": {"to": state["to"], "body": state["body"]}},
               "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True,
                          "allow_ignore": True},
               "description": "Send this mail?"}
    response = interrupt([request])[0]
    if response["type"] == "accept":
        return {"outcome": f"sent to {state['to']}"}
    if response["type"] == "edit":
        return {"outcome": f"sent to {response['args']['args']['to']}"}
    if response["type"] == "response":
        return {"outcome": f"told: {response['args']}"}
    return {"outcome": "ignored"}


def agent_inbox() -> StateGraph:
    """Agent Inbox's ``HumanInterrupt``, answered by a list of ``HumanResponse``."""
    graph = StateGraph(Mail)
    graph.add_node("review", _agent_inbox)
    graph.add_edge(START, "review")
    return graph


def _middleware(state: Mail) -> dict[str, Any]:
    request = {"action_requests": [
        {"name": "send_email", "args": {"to": state["to"], "body": state["body"]},
         "description": "Tool execution requires approval"},
        {"name": "delete_draft", "args": {"id": 7}}],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
            {"action_name": "delete_draft", "allowed_decisions": ["approve", "reject"]}]}
    decisions = interrupt(request)["decisions"]
    outcome = []
    for action, decision in zip(request["action_requests"], decisions, strict=True):
        if decision["type"] == "edit":
            outcome.append(f"{decision['edited_action']['name']}"
                           f"({decision['edited_action']['args']})")
        elif decision["type"] == "reject":
            outcome.append(f"not {action['name']}: {decision.get('message', '')}")
        else:
            outcome.append(action["name"])
    return {"outcome": "; ".join(outcome)}


def middleware() -> StateGraph:
    """``HumanInTheLoopMiddleware``'s ``HITLRequest``, answered by ``{"decisions": [...]}``."""
    graph = StateGraph(Mail)
    graph.add_node("tools", _middleware)
    graph.add_edge(START, "tools")
    return graph


compiled_parallel = parallel().compile()


def _reply(state: MessagesState) -> dict[str, Any]:
    draft = AIMessage(content=f"Re: {state['messages'][-1].content}", id="draft")
    verdict = interrupt({"question": "send the reply?", "draft": draft.content})
    return {"messages": [draft, HumanMessage(content=str(verdict), id="verdict")]}


def chat() -> StateGraph:
    """A messages graph: its state holds LangChain message objects, not JSON."""
    graph = StateGraph(MessagesState)
    graph.add_node("reply", _reply)
    graph.add_edge(START, "reply")
    return graph


# Registered with a deadline and a default: graph-level settings, as interrupt() takes none.
with_deadline = two_interrupts().compile().with_config(
    metadata={"forge": {"deadline_s": 60, "default": "1"}})


def _ask(state: MessagesState) -> dict[str, Any]:
    said = interrupt({"question": "your message?", "turn": len(state["messages"]) // 2})
    return {"messages": [HumanMessage(content=str(said))]}


def _answer(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}


def chat_loop() -> StateGraph:
    """A conversation that never ends: each turn asks for a message, then replies."""
    graph = StateGraph(MessagesState)
    graph.add_node("ask", _ask)
    graph.add_node("answer", _answer)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "answer")
    graph.add_edge("answer", "ask")
    return graph


def _thrice(state: Log) -> dict[str, Any]:
    return {"log": [str(interrupt({"question": f"step {n}?"})) for n in range(3)]}


def thrice() -> StateGraph:
    """One node asking three times: LangGraph gives the three interrupts one id."""
    graph = StateGraph(Log)
    graph.add_node("thrice", _thrice)
    graph.add_edge(START, "thrice")
    return graph


class Pace(TypedDict):
    log: Annotated[list[str], operator.add]
    seconds: float


async def _think(state: Pace) -> dict[str, Any]:
    await asyncio.sleep(state["seconds"])  # as a node awaiting an async model client
    return {"log": [f"approved={interrupt({'question': 'go on?'})}"]}


def thinking() -> StateGraph:
    """An ``async def`` node that awaits, then asks; a sync node after it. LangGraph's
    sync API cannot run it: only ``ainvoke`` can."""
    graph = StateGraph(Pace)
    graph.add_node("think", _think)
    graph.add_node("finish", lambda state: {"log": ["finished"]})
    graph.add_edge(START, "think")
    graph.add_edge("think", "finish")
    graph.add_edge("finish", END)
    return graph
