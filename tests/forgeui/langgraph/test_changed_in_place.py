"""A node that changes an old message in place: what the database keeps is what every
process reads, this one (which knows the list) and a new one (which reads it cold)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from langchain_core.messages import HumanMessage

from forgeui.langgraph import ForgeSaver
from tests.forgeui.conftest import ROOT, database_url, django_env

from .graphs import amending_graph
from .test_graphs import DATABASES, config

READ_COLD = """
import json, sys
import django
django.setup()
from forgeui.langgraph import ForgeSaver
found = ForgeSaver().get_tuple({"configurable": {"thread_id": sys.argv[1]}})
print(json.dumps([m.content for m in found.checkpoint["channel_values"]["messages"]]))
"""


@pytest.mark.parametrize("alias", DATABASES)
def test_a_message_changed_in_place_reads_back_the_same_everywhere(alias: str) -> None:
    saver = ForgeSaver(alias)
    graph = amending_graph(saver)
    # Each step saved before the next runs, so no save can see the change made after it.
    graph.invoke({"messages": [HumanMessage("hello")]}, config("amended"), durability="sync")
    here = [m.content for m in saver.get_tuple(config("amended"))
            .checkpoint["channel_values"]["messages"]]
    assert here == ["amended", "turn 1", "amended the first"]
    done = subprocess.run([sys.executable, "-c", READ_COLD, "amended"], cwd=ROOT,
                          env=django_env(database_url(alias)), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == here


@pytest.mark.parametrize("alias", DATABASES)
def test_a_value_changed_after_it_was_read_is_read_again(alias: str) -> None:
    saver = ForgeSaver(alias)
    graph = amending_graph(saver)
    graph.invoke({"messages": [HumanMessage("hello")]}, config("scribbled"),
                 durability="sync")
    first = saver.get_tuple(config("scribbled")).checkpoint["channel_values"]["messages"]
    first[1].content = "scribbled"  # the reader's own copy, not what the thread holds
    again = saver.get_tuple(config("scribbled")).checkpoint["channel_values"]["messages"]
    assert [m.content for m in again] == ["amended", "turn 1", "amended the first"]
