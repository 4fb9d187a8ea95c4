"""LangGraph graphs the saver tests run: as their authors would write them."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt


class Review(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    decisions: Annotated[list[str], operator.add]
    amount: int
    confirmed: str


class Confirmation(TypedDict):
    confirmed: str


def draft(state: Review) -> dict[str, Any]:
    return {"messages": [AIMessage(f"pay {state['amount']}?")]}


def approve(state: Review) -> dict[str, Any]:
    answer = interrupt({"question": "approve?", "amount": state["amount"]})
    return {"decisions": [answer], "messages": [HumanMessage(answer)]}


def confirm(state: Confirmation) -> dict[str, Any]:
    return {"confirmed": interrupt("confirm?")}


def execute(state: Review) -> dict[str, Any]:
    return {"messages": [AIMessage(f"done: {', '.join(state['decisions'])}; {state['confirmed']}")]}


def review_graph(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """draft -> approve (interrupt) -> confirm (a subgraph that interrupts) -> execute."""
    sub = StateGraph(Confirmation)
    sub.add_node("confirm", confirm)
    sub.add_edge(START, "confirm")
    builder = StateGraph(Review)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_node("confirmation", sub.compile())
    builder.add_node("execute", execute)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", "confirmation")
    builder.add_edge("confirmation", "execute")
    builder.add_edge("execute", END)
    return builder.compile(checkpointer=saver)


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def add_message_batches(state: list[AnyMessage], batches: Sequence[Any]) -> list[AnyMessage]:
    """``add_messages`` folded over a batch of writes, as ``DeltaChannel`` calls it."""
    for batch in batches:
        state = add_messages(state, batch)
    return state


class DeltaChat(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(add_message_batches,
                                                       snapshot_frequency=8)]


def chat_graph(saver: BaseCheckpointSaver[Any], *, delta: bool = False
               ) -> CompiledStateGraph[Any]:
    """A chat loop: each turn asks for the user's message, then replies to it."""

    # ``Any``: LangGraph reads a node's state annotation as its input schema.
    def ask(state: Any) -> dict[str, Any]:
        return {"messages": [HumanMessage(interrupt({"turn": len(state["messages"]) // 2}))]}

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"re: {state['messages'][-1].content}")]}

    builder = StateGraph(DeltaChat if delta else Chat)
    builder.add_node("ask", ask)
    builder.add_node("reply", reply)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "reply")
    builder.add_edge("reply", "ask")
    return builder.compile(checkpointer=saver)


def said(messages: Sequence[AnyMessage]) -> list[tuple[str, Any]]:
    """Messages without their ids (which are random per run)."""
    return [(m.type, m.content) for m in messages]


def amending_graph(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """say, then amend: a node that changes the first message in place, as careless node
    code does, beside appending one."""

    def say(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"turn {len(state['messages'])}")]}

    def amend(state: Any) -> dict[str, Any]:
        state["messages"][0].content = "amended"
        return {"messages": [AIMessage("amended the first")]}

    builder = StateGraph(Chat)
    builder.add_node("say", say)
    builder.add_node("amend", amend)
    builder.add_edge(START, "say")
    builder.add_edge("say", "amend")
    builder.add_edge("amend", END)
    return builder.compile(checkpointer=saver)
