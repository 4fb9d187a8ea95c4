"""The built-in graph behind every approval request: one node that pauses once.

It imports no Django: the run's input was checked by ``forgeui.requests.shapes``, which
alone decides the deadline, its default, the assignees and the sensitive keys, never the
asking agent's data.
"""

from __future__ import annotations

from typing import Any

from runtime import DurableExecutor, NodeContext

GRAPH = "forge.request"


def ask(request: dict[str, Any], ctx: NodeContext) -> Any:
    control = request.get("control") or {}
    options: dict[str, Any] = {"assignees": control.get("assignees")}
    if control.get("sensitive"):
        options["sensitive"] = control["sensitive"]
    if control.get("deadline_s") is not None:
        options.update(deadline_s=control["deadline_s"], default=control["default"])
    return ctx.interrupt(request["payload"], **options)


request_graph = DurableExecutor(nodes=[("ask", ask)], name=GRAPH)
