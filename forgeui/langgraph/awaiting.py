"""A LangGraph graph with ``async def`` nodes, driven on the caller's event loop.

LangGraph's sync API cannot run an async node, so such a graph is called with ``ainvoke``,
awaited where the task awaits it: a node awaiting a model holds no thread, and many runs
wait side by side on one worker loop. The blocking parts of a call (the forge head's load
and save, ``get_state``) run on the loop's pool, each on that thread's own connection, and
the thread's lock is ``thread_lock_async``, held across the awaited call.
"""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.pregel import Pregel

from forgeui.langgraph import mirror
from forgeui.langgraph.closing import off_loop
from forgeui.langgraph.locks import thread_lock_async
from runtime import Draft, ResumeTarget, RunResult


def has_async_nodes(graph: Pregel) -> bool:
    """Whether a node of ``graph`` (or of a subgraph that is one of its nodes) is async
    only: such a graph runs with ``ainvoke``."""
    for node in graph.nodes.values():
        bound = node.bound
        if isinstance(bound, Pregel) and has_async_nodes(bound):
            return True
        if getattr(bound, "func", True) is None and getattr(bound, "afunc", None):
            return True
    return False


class AwaitedCalls:
    """The calls ``tasks.drive`` awaits on a graph with async nodes: the ``*_sync``
    methods' twins, with ``ainvoke`` in place of ``invoke``. Mixed into
    ``LangGraphExecutor``, whose blocking halves they call (``self`` is one; not named
    here, as ``executor`` imports this module)."""

    async def run(self: Any, input: Any, thread_id: str | None = None, *,
                  metadata: dict[str, Any] | None = None,
                  run_id: str | None = None) -> RunResult:
        """``ainvoke(input)`` on the thread, as a new run of it."""
        thread_id = thread_id or uuid.uuid4().hex
        async with thread_lock_async(thread_id):
            started = await off_loop(self._start, input, thread_id, metadata or {}, run_id)
            return await self._ainvoke(input, started)

    async def resume_targeted(self: Any, target: ResumeTarget,
                              command: Any = None) -> RunResult:
        """Answer pending interrupts: ``ainvoke(Command(resume={interrupt_id: value}))``."""
        async with thread_lock_async(await off_loop(self._thread_of, target.run_id)):
            before, value, answered = await off_loop(self._resuming, target, command)
            return await self._ainvoke(value, before, answered)

    async def recover(self: Any, thread_id: str) -> RunResult:
        """``ainvoke(None)``: go on from the latest checkpoint."""
        async with thread_lock_async(thread_id):
            before = await off_loop(self._recoverable, thread_id)
            if isinstance(before, RunResult):
                return before
            return await self._ainvoke(None, before)

    async def steer(self: Any, target: ResumeTarget, text: str,
                    ) -> dict[str, Any]:
        """Keep a steering note beside the run."""
        async with thread_lock_async(await off_loop(self._thread_of, target.run_id)):
            return await off_loop(self._steer, target, text)

    async def cancel(self: Any, target: str | ResumeTarget) -> RunResult:
        """Stop the run where it stands: its pending interrupts end as cancelled."""
        run_id = target.run_id if isinstance(target, ResumeTarget) else target
        async with thread_lock_async(await off_loop(self._thread_of, run_id)):
            return await off_loop(self._cancel, run_id)

    async def _ainvoke(self: Any, value: Any, before: Draft,
                       answered: frozenset[str] = frozenset()) -> RunResult:
        config = self._config(before.thread_id)
        outcome = mirror.Outcome()
        try:
            await self.graph.ainvoke(value, config)
        except Exception as exc:  # the node's own error: the run is saved as failed
            outcome = await off_loop(self._failure, exc, config)
        return await off_loop(self._saved, config, before, outcome, answered)
