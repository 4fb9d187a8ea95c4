"""Real compiled LangGraph graphs on ``ForgeSaver``, beside the same graphs on LangGraph's
``InMemorySaver``: the same answers end in the same state, on both databases, sync and
async, and a saver that has never seen the thread (a new process) reads it back whole."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from forgeui.langgraph import ForgeSaver
from forgeui.langgraph import blobs as blob_module
from forgeui.models import LangGraphBlob, LangGraphCheckpoint

from .graphs import chat_graph, review_graph, said

DATABASES = [
    pytest.param("sqlite", marks=pytest.mark.django_db(transaction=True,
                                                       databases=["sqlite"])),
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.django_db(
        transaction=True, databases=["postgres"])]),
]


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def run_review(graph: Any, thread_id: str) -> list[Any]:
    """Start the review, answer its two interrupts; what each step paused on."""
    seen = []
    out = graph.invoke({"amount": 500, "messages": [], "decisions": []}, config(thread_id))
    seen.append([(i.value, i.id is not None) for i in out["__interrupt__"]])
    out = graph.invoke(Command(resume="yes"), config(thread_id))
    seen.append([(i.value, i.id is not None) for i in out["__interrupt__"]])
    state = graph.get_state(config(thread_id), subgraphs=True)
    seen.append([t.state.config["configurable"]["checkpoint_ns"].split(":")[0]
                 for t in state.tasks if t.state is not None])
    out = graph.invoke(Command(resume="sure"), config(thread_id))
    assert "__interrupt__" not in out
    return seen


def final(graph: Any, thread_id: str) -> tuple[Any, ...]:
    values = graph.get_state(config(thread_id)).values
    return said(values["messages"]), values["decisions"], values["confirmed"]


@pytest.mark.parametrize("alias", DATABASES)
def test_review_graph_sync(alias: str) -> None:
    memory = review_graph(InMemorySaver())
    forge = review_graph(ForgeSaver(alias))
    assert run_review(forge, "t1") == run_review(memory, "t1") == [
        [({"question": "approve?", "amount": 500}, True)],
        [("confirm?", True)],
        ["confirmation"],
    ]
    assert final(forge, "t1") == final(memory, "t1") == (
        [("ai", "pay 500?"), ("human", "yes"), ("ai", "done: yes; sure")], ["yes"], "sure")
    cold = review_graph(ForgeSaver(alias))
    assert final(cold, "t1") == final(memory, "t1")
    history = [s.values for s in cold.get_state_history(config("t1"))]
    assert len(history) == len(list(memory.get_state_history(config("t1"))))
    assert LangGraphCheckpoint.objects.using(alias).exclude(checkpoint_ns="").exists()


@pytest.mark.parametrize("alias", DATABASES)
async def test_review_graph_async(alias: str, close_worker_connections: None) -> None:
    memory = review_graph(InMemorySaver())
    forge = review_graph(ForgeSaver(alias))
    for graph in (memory, forge):
        out = await graph.ainvoke({"amount": 7, "messages": [], "decisions": []},
                                  config("a1"))
        assert out["__interrupt__"][0].value == {"question": "approve?", "amount": 7}
        out = await graph.ainvoke(Command(resume="no"), config("a1"))
        assert out["__interrupt__"][0].value == "confirm?"
        out = await graph.ainvoke(Command(resume="stop"), config("a1"))
        assert "__interrupt__" not in out
    want = (await memory.aget_state(config("a1"))).values
    for graph in (forge, review_graph(ForgeSaver(alias))):
        got = (await graph.aget_state(config("a1"))).values
        assert said(got["messages"]) == said(want["messages"])
        assert (got["decisions"], got["confirmed"]) == (want["decisions"], want["confirmed"])
        assert want["decisions"] == ["no"] and want["confirmed"] == "stop"
        history = [s async for s in graph.aget_state_history(config("a1"))]
        assert len(history) == len([s async for s in memory.aget_state_history(config("a1"))])


def chat(graph: Any, thread_id: str, turns: int, start: int = 0) -> None:
    if start == 0:
        assert graph.invoke({"messages": []}, config(thread_id))["__interrupt__"]
    for turn in range(start, start + turns):
        paused = graph.invoke(Command(resume=f"hello {turn}"), config(thread_id))
        assert paused["__interrupt__"][0].value == {"turn": turn + 1}


def messages(graph: Any, thread_id: str) -> list[tuple[str, Any]]:
    return said(graph.get_state(config(thread_id)).values["messages"])


@pytest.mark.parametrize("alias", DATABASES)
def test_chat_stored_as_appended_parts(alias: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blob_module, "APPEND_CHAIN", 4)
    memory, forge = chat_graph(InMemorySaver()), chat_graph(ForgeSaver(alias))
    for graph in (memory, forge):
        chat(graph, "c1", 15)
    want = messages(memory, "c1")
    assert len(want) == 30 and want[-1] == ("ai", "re: hello 14")
    assert messages(forge, "c1") == want
    assert messages(chat_graph(ForgeSaver(alias)), "c1") == want
    parts = LangGraphBlob.objects.using(alias).filter(thread_id="c1", channel="messages")
    assert parts.exclude(base_version="").count() > parts.filter(base_version="").count() > 1
    assert max(parts.values_list("depth", flat=True)) == 3
    # Every older checkpoint reads back as it was, from a saver that never saw it.
    cold = chat_graph(ForgeSaver(alias))
    old = [said(s.values.get("messages", [])) for s in cold.get_state_history(config("c1"))]
    assert old == [said(s.values.get("messages", []))
                   for s in memory.get_state_history(config("c1"))]


@pytest.mark.parametrize("alias", DATABASES)
def test_chat_forked_from_an_old_checkpoint(alias: str) -> None:
    memory, forge = chat_graph(InMemorySaver()), chat_graph(ForgeSaver(alias))
    for graph in (memory, forge):
        chat(graph, "f1", 6)
        # Back to the pause after turn 2, answer differently, go on on that branch.
        past = next(s for s in graph.get_state_history(config("f1"))
                    if len(s.values.get("messages", [])) == 6 and s.next == ("ask",))
        branch = graph.update_state(past.config, {"messages": [HumanMessage("other")]},
                                    as_node="ask")
        out = graph.invoke(None, branch)
        assert out["__interrupt__"][0].value == {"turn": 4}
        graph.invoke(Command(resume="more"), config("f1"))
    want = messages(memory, "f1")
    assert want[-4:] == [("human", "other"), ("ai", "re: other"), ("human", "more"),
                         ("ai", "re: more")]
    assert len(want) == 10
    assert messages(forge, "f1") == want
    assert messages(chat_graph(ForgeSaver(alias)), "f1") == want


@pytest.mark.parametrize("alias", DATABASES)
def test_delta_channel_chat(alias: str) -> None:
    memory = chat_graph(InMemorySaver(), delta=True)
    forge = chat_graph(ForgeSaver(alias), delta=True)
    for graph in (memory, forge):
        chat(graph, "d1", 12)
    want = messages(memory, "d1")
    assert len(want) == 24
    assert messages(forge, "d1") == want
    assert messages(chat_graph(ForgeSaver(alias), delta=True), "d1") == want
    # Keeping only the latest checkpoint would lose the writes its value is rebuilt from.
    kept = LangGraphCheckpoint.objects.using(alias).filter(thread_id="d1").count()
    with pytest.raises(NotImplementedError, match="DeltaChannel: d1"):
        ForgeSaver(alias).prune(["d1"], strategy="keep_latest")
    assert LangGraphCheckpoint.objects.using(alias).filter(thread_id="d1").count() == kept
    assert messages(chat_graph(ForgeSaver(alias), delta=True), "d1") == want


@pytest.mark.parametrize("alias", DATABASES)
def test_prune_keeps_what_the_latest_reads(alias: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setattr(blob_module, "APPEND_CHAIN", 4)
    saver = ForgeSaver(alias)
    forge, memory = chat_graph(saver), chat_graph(InMemorySaver())
    for graph in (memory, forge):
        chat(graph, "p1", 9)
    saver.prune(["p1"], strategy="keep_latest")
    assert LangGraphCheckpoint.objects.using(alias).filter(thread_id="p1").count() == 1
    parts = LangGraphBlob.objects.using(alias).filter(thread_id="p1", channel="messages")
    assert parts.count() <= 4
    for graph in (forge, chat_graph(ForgeSaver(alias))):
        assert messages(graph, "p1") == messages(memory, "p1")
    chat(forge, "p1", 2, start=9)
    chat(memory, "p1", 2, start=9)
    assert messages(chat_graph(ForgeSaver(alias)), "p1") == messages(memory, "p1")
