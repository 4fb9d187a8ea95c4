"""LangChain's per-call approvals, ``HumanInTheLoopMiddleware(interrupt_mode="per_call")``.

Such an interrupt asks about one tool call, ``{"type": "tool_approval", tool_call_id, name,
args, description}``, and takes one decision (``{"type": "approve"}``, ``{"type": "edit",
"edited_action": {name, args}}``, ...) of those its ``response_schema`` allows: LangGraph
checks the answer against that schema and anything else fails the run.

Forge shows it as the middleware's batched request of one call (the same keys added
beside the graph's own), so the inbox's per-call form, the API's checks and bulk answers
offer exactly the decisions allowed; the ``{"decisions": [decision]}`` they answer with
goes back to the graph as that one decision.
"""

from __future__ import annotations

from typing import Any

KIND = "tool_approval"
DECISIONS = ("approve", "edit", "reject", "respond")
# What the middleware's ``interrupt_on={tool: True}`` allows, should no schema say.
DEFAULT = ["approve", "edit", "reject", "respond"]


def is_per_call(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("type") == KIND
            and isinstance(value.get("name"), str) and isinstance(value.get("args"), dict))


def presented(value: Any, response_schema: Any) -> Any:
    """``value`` with the one-call request forge answers beside its own keys (any other
    interrupt's value is returned as it is)."""
    if not is_per_call(value):
        return value
    action = {"name": value["name"], "args": value["args"]}
    if isinstance(value.get("description"), str):
        action["description"] = value["description"]
    return {**value, "action_requests": [action], "review_configs": [
        {"action_name": value["name"], "allowed_decisions": allowed(response_schema)}]}


def allowed(response_schema: Any) -> list[str]:
    """The decision types a per-call ``response_schema`` (JSON Schema) accepts, in the
    form's order: each branch of its union on ``type``, or its only decision's ``type``."""
    if not isinstance(response_schema, dict):
        return list(DEFAULT)
    mapping = (response_schema.get("discriminator") or {}).get("mapping")
    if isinstance(mapping, dict):
        kinds = list(mapping)
    else:
        kinds = [((response_schema.get("properties") or {}).get("type") or {}).get("const")]
    return [kind for kind in DECISIONS if kind in kinds] or list(DEFAULT)


def resume_value(payload: Any, answer: Any) -> Any:
    """What the graph is resumed with: for a per-call request answered as a one-call
    request, its one decision; else ``answer`` itself."""
    if not is_per_call(payload) or not isinstance(answer, dict):
        return answer
    decisions = answer.get("decisions")
    if not isinstance(decisions, list) or len(decisions) != 1:
        return answer
    decision = decisions[0]
    if isinstance(decision, dict) and decision.get("type") == "respond":
        return {"message": "", **decision}  # the middleware requires the words, even none
    return decision
