"""Approval payloads of other frameworks, shown as forge's per-call form and answered in
their own shape.

- Agent Inbox's ``HumanInterrupt`` (``interrupt([request])``): ``{action_request: {action,
  args}, config: {allow_accept, allow_edit, allow_respond, allow_ignore}, description}``,
  answered by one ``HumanResponse`` per request, ``{type: accept|edit|response|ignore,
  args}``.
- LangChain's ``HumanInTheLoopMiddleware`` (``HITLRequest``): ``{action_requests: [{name,
  args, description?}], review_configs: [{action_name, allowed_decisions}]}``, answered by
  ``{"decisions": [{type: approve|edit|reject|respond, edited_action?, message?}]}``.

Both become forge actions (``{name, args, description, decisions}``); the reviewer's
decisions (``{type: approve|edit|reject|respond, args?, message?}``) go back translated.
"""

from __future__ import annotations

from typing import Any

# Agent Inbox's config flag, response type and the forge decision each stands for.
AGENT_INBOX = (("allow_accept", "accept", "approve"), ("allow_edit", "edit", "edit"),
               ("allow_respond", "response", "respond"), ("allow_ignore", "ignore", "reject"))


def actions_of(payload: Any) -> list[dict[str, Any]] | None:
    """The forge actions a foreign payload proposes, or None when it is not one."""
    if _is_agent_inbox(payload):
        return [_inbox_action(request) for request in _inbox_requests(payload)]
    if _is_middleware(payload):
        return _middleware_actions(payload)
    return None


def answer(payload: Any, decisions: list[dict[str, Any]]) -> Any:
    """The reviewer's decisions (one per action) in the shape the graph reads."""
    if _is_agent_inbox(payload):
        responses = [_inbox_response(request, decision) for request, decision
                     in zip(_inbox_requests(payload), decisions, strict=True)]
        return responses if isinstance(payload, list) else responses[0]
    if _is_middleware(payload):
        return {"decisions": [_middleware_decision(action, decision) for action, decision
                              in zip(payload["action_requests"], decisions, strict=True)]}
    raise ValueError("not an Agent Inbox or HumanInTheLoopMiddleware payload")


# -- Agent Inbox ----------------------------------------------------------------------------


def _is_inbox_request(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("action_request"), dict)
            and isinstance(item.get("config"), dict))


def _is_agent_inbox(payload: Any) -> bool:
    if isinstance(payload, list):
        return bool(payload) and all(_is_inbox_request(item) for item in payload)
    return _is_inbox_request(payload)


def _inbox_requests(payload: Any) -> list[dict[str, Any]]:
    return payload if isinstance(payload, list) else [payload]


def _inbox_action(request: dict[str, Any]) -> dict[str, Any]:
    config, action = request["config"], request["action_request"]
    return {"name": str(action.get("action", "")), "args": action.get("args"),
            "description": request.get("description"),
            "decisions": [ours for flag, _, ours in AGENT_INBOX if config.get(flag)]}


def _inbox_response(request: dict[str, Any], decision: dict[str, Any]) -> dict[str, Any]:
    kind = decision["type"]
    theirs = next(t for _, t, ours in AGENT_INBOX if ours == kind)
    if kind == "edit":
        return {"type": theirs, "args": {"action": request["action_request"].get("action"),
                                         "args": decision.get("args")}}
    if kind == "respond":
        return {"type": theirs, "args": decision.get("message", "")}
    return {"type": theirs, "args": None}


# -- HumanInTheLoopMiddleware ---------------------------------------------------------------


def _is_middleware(payload: Any) -> bool:
    return (isinstance(payload, dict) and isinstance(payload.get("action_requests"), list)
            and isinstance(payload.get("review_configs"), list)
            and all(isinstance(a, dict) for a in payload["action_requests"]))


def _middleware_actions(payload: dict[str, Any]) -> list[dict[str, Any]]:
    configs = {c.get("action_name"): c for c in payload["review_configs"] if isinstance(c, dict)}
    actions = []
    for request in payload["action_requests"]:
        allowed = configs.get(request.get("name"), {}).get("allowed_decisions")
        # langchain 1.0 named the arguments ``arguments``; later versions ``args``.
        args = request.get("args", request.get("arguments"))
        actions.append({"name": str(request.get("name", "")), "args": args,
                        "description": request.get("description"),
                        "decisions": [d for d in allowed or ["approve", "edit", "reject"]
                                      if d in ("approve", "edit", "reject", "respond")]})
    return actions


def _middleware_decision(request: dict[str, Any], decision: dict[str, Any]) -> dict[str, Any]:
    kind = decision["type"]
    if kind == "edit":
        return {"type": "edit", "edited_action": {"name": request.get("name"),
                                                  "args": decision.get("args")}}
    if kind in ("reject", "respond") and decision.get("message"):
        return {"type": kind, "message": decision["message"]}
    return {"type": kind}


# -- answers sent as values (the API, bulk) -------------------------------------------------


def answer_problem(payload: Any, value: Any) -> str | None:
    """Why ``value`` is not an answer in the payload's own shape (None: it is one, or the
    payload is no foreign request)."""
    actions = actions_of(payload)
    if actions is None:
        return None
    if _is_agent_inbox(payload):
        responses = value if isinstance(payload, list) else [value]
        if not isinstance(responses, list) or len(responses) != len(actions):
            return (f"answer with a list of {len(actions)} HumanResponse" if
                    isinstance(payload, list) else "answer with one HumanResponse")
        allowed = [[t for _, t, ours in AGENT_INBOX if ours in a["decisions"]] for a in actions]
    else:
        responses = value.get("decisions") if isinstance(value, dict) else None
        if not isinstance(responses, list) or len(responses) != len(actions):
            return f'answer with {{"decisions": [...]}}, one per action ({len(actions)})'
        allowed = [a["decisions"] for a in actions]
    for index, (response, kinds) in enumerate(zip(responses, allowed, strict=True)):
        kind = response.get("type") if isinstance(response, dict) else None
        if kind not in kinds:
            return f"response {index}: type must be one of {', '.join(kinds)}, not {kind!r}"
    return None


def settles_all(payload: Any, decision: str) -> bool:
    """Whether every action of a foreign request may be decided ``decision`` at once."""
    actions = actions_of(payload)
    return bool(actions) and all(decision in a["decisions"] for a in actions or [])
