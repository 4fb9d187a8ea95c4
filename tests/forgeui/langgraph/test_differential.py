"""The same LangGraph graphs, answered the same way, end in the same state whether they run
straight on LangGraph's ``InMemorySaver`` or through forge's API and worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from forgeui.langgraph.mirror import plain
from tests.forgeui.apiclient import Api
from tests.forgeui.langgraph import team_graphs as graphs

Answer = Callable[[Any], Any]
CHAT = {"messages": [{"role": "user", "content": "where is my parcel?", "id": "ask"}]}


def by_question(payload: Any) -> Any:
    """The answer a reviewer gives, decided by the question alone (so both runs agree)."""
    if isinstance(payload, dict) and payload.get("kind") == "before":
        return True
    answers = {"amount?": "500", "pay 500?": "yes", "send the reply?": "send"}
    return answers.get(payload["question"], payload["question"].upper())


def direct(graph: Any, input: Any, answer: Answer, one_at_a_time: bool = False) -> Any:
    """Run on LangGraph alone: answer every pending interrupt (or pass the breakpoint);
    the final values as JSON data (a chat's messages as their ``model_dump()``)."""
    config = {"configurable": {"thread_id": "direct"}}
    graph.invoke(input, config)
    for _ in range(20):
        state = graph.get_state(config)
        if not state.next:
            return plain(state.values)
        pending = list(state.interrupts)[:1] if one_at_a_time else state.interrupts
        graph.invoke(Command(resume={i.id: answer(i.value) for i in pending})
                     if pending else None, config)
    raise AssertionError("the direct run never ended")


def through_forge(api: Api, name: str, input: Any, answer: Answer,
                  one_at_a_time: bool = False) -> dict[str, Any]:
    """Run through the API: every pending interrupt answered, one route or another."""
    started = api.start(name, input)
    for _ in range(20):
        pending = api.pending_of(started)
        if not pending:
            break
        if one_at_a_time or len(pending) == 1:
            response = api.post("reviewer", f"/api/interrupts/{pending[0]['id']}/resume",
                                {"value": answer(pending[0]["payload"])})
        else:
            response = api.post("reviewer", "/api/resume_map", {
                "thread_id": started["thread_id"],
                "answers": {i["id"]: answer(i["payload"]) for i in pending}})
        assert response.status_code == 202, response.content
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "completed", run
    return run


CASES = [
    ("lg_two", graphs.two_interrupts().compile, False),
    ("lg_parallel", graphs.parallel().compile, False),
    ("lg_parallel", graphs.parallel().compile, True),
    ("lg_subgraph", graphs.subgraph().compile, False),
    ("lg_breakpoint", graphs.breakpoint_compiled, False),
    ("lg_chat", graphs.chat().compile, False),
]


@pytest.mark.parametrize(("name", "compile", "one_at_a_time"), CASES,
                         ids=["two", "parallel-map", "parallel-each", "subgraph", "before", "chat"])
def test_forge_ends_where_langgraph_ends(api: Api, name: str, compile: Callable[..., Any],
                                         one_at_a_time: bool) -> None:
    input = CHAT if name == "lg_chat" else {"log": []}
    expected = direct(compile(checkpointer=InMemorySaver()), input, by_question, one_at_a_time)
    run = through_forge(api, name, input, by_question, one_at_a_time)
    assert run["output"] == expected
    assert expected.get("log") or len(expected["messages"]) == 3  # each took its answers


def test_a_bad_input_fails_the_run_and_says_why(api: Api) -> None:
    started = api.start("lg_two", {"log": 5})
    run = api.get("auditor", f"/api/runs/{started['run_id']}").json()
    assert run["status"] == "failed"
    assert run["error"]["type"] and run["error"]["message"]
    assert api.pending_of(started) == []


def test_an_interrupt_shows_where_it_lives(api: Api) -> None:
    """Namespace, node, task, LangGraph's interrupt id and checkpoint id, as LangGraph has
    them; a subgraph's interrupt carries the subgraph's checkpoint namespace."""
    started = api.start("lg_subgraph", {"log": []})
    [pending] = api.pending_of(started)
    assert pending["node"] == "review"
    assert pending["payload"] == {"question": "review"}
    assert pending["namespace"][0] == "lg_subgraph"
    assert pending["namespace"][1].startswith("team:")
    assert pending["run_id"] == started["run_id"]
    from forgeui.langgraph.checkpointer import checkpointer

    config = {"configurable": {"thread_id": started["thread_id"]}}
    state = graphs.subgraph().compile(checkpointer=checkpointer()).get_state(
        config, subgraphs=True)
    [task] = state.tasks
    [inner] = task.state.tasks
    assert pending["id"] == inner.interrupts[0].id
    assert pending["task_id"] == inner.id
    assert task.state.config["configurable"]["checkpoint_ns"] == pending["namespace"][1]
    assert pending["checkpoint_id"] == state.config["configurable"]["checkpoint_id"]
