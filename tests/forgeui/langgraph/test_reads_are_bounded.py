"""Going on with a long thread reads a bounded amount: ``get_tuple`` of the latest
checkpoint costs the same few queries at any length, and ``DeltaChannel`` history reads
back to the channel's last snapshot, not the thread's start."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from langgraph.checkpoint.base import BaseCheckpointSaver

from forgeui.langgraph import ForgeSaver, statements
from forgeui.langgraph.blobs import APPEND_CHAIN, SEGMENT

from .graphs import chat_graph
from .test_graphs import DATABASES, chat, config

blobs = statements.blobs


def queries(alias: str, fn: Any) -> tuple[int, Any]:
    with CaptureQueriesContext(connections[alias]) as captured:
        result = fn()
    return len(captured.captured_queries), result


@pytest.mark.parametrize("alias", DATABASES)
def test_get_tuple_of_the_latest_is_bounded(alias: str) -> None:
    graph = chat_graph(ForgeSaver(alias))
    chat(graph, "short", 5)
    chat(graph, "long", 100)
    counts = {}
    for thread_id, length in (("short", 10), ("long", 200)):
        cold = ForgeSaver(alias)  # a new process: nothing known
        counts[thread_id], found = queries(alias, lambda t=thread_id, s=cold: s.get_tuple(
            config(t)))
        assert len(found.checkpoint["channel_values"]["messages"]) == length
        warm, again = queries(alias, lambda t=thread_id, s=cold: s.get_tuple(config(t)))
        assert again.checkpoint["channel_values"] == found.checkpoint["channel_values"]
        assert warm <= counts[thread_id]
    assert counts["short"] == counts["long"] <= 2, counts


@pytest.mark.parametrize("alias", DATABASES)
def test_a_long_list_is_read_from_few_rows(alias: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    graph = chat_graph(ForgeSaver(alias))
    chat(graph, "long", 120)  # a list of 240 messages, each step appending one
    read: list[int] = []

    def counted(using: str, where: Any) -> Any:
        rows = blobs(using, where)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(statements, "blobs", counted)
    for checkpoint in ForgeSaver(alias).list(config("long"), limit=40):
        read.clear()
        cold = ForgeSaver(alias).get_tuple(checkpoint.config)
        assert cold.checkpoint["channel_values"] == checkpoint.checkpoint["channel_values"]
        assert len(read) == 1 and read[0] <= 2 + APPEND_CHAIN // SEGMENT + SEGMENT, read


@pytest.mark.parametrize("alias", DATABASES)
def test_delta_channel_history_is_bounded_and_right(alias: str) -> None:
    saver = ForgeSaver(alias)
    graph = chat_graph(saver, delta=True)
    chat(graph, "short", 6)  # past its first snapshot, as the long one is
    chat(graph, "long", 40)
    counts = {}
    for thread_id in ("short", "long"):
        latest = saver.get_tuple(config(thread_id))
        counts[thread_id], got = queries(alias, lambda c=latest.config: (
            ForgeSaver(alias).get_delta_channel_history(config=c, channels=["messages"])))
        assert got["messages"]["writes"]
    assert counts["short"] == counts["long"] <= 5, counts
    # The same history LangGraph's own walk (get_tuple along the parents) finds, at
    # every checkpoint of the thread.
    for state in saver.list(config("long")):
        ours = saver.get_delta_channel_history(config=state.config, channels=["messages"])
        walked = BaseCheckpointSaver.get_delta_channel_history(
            saver, config=state.config, channels=["messages"])
        assert ours == walked, state.config
