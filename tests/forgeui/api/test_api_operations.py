"""The OpenAPI operations are a contract: clients generated from the schema call them by id.

The views live in one module per feature; their operation ids stay what they were,
``forgeui_api_routes_<view>`` (and ``forgeui_api_requests_<view>`` for approval requests).
"""

from __future__ import annotations

from typing import Any

from forgeui.api.routes import api

REQUESTS = ["create_request", "get_request", "decide_request"]
ROUTES = [
    "health", "list_graphs", "list_runs", "start_run", "get_run", "cancel_run", "recover_run",
    "list_checkpoints", "get_checkpoint", "get_checkpoint_state", "fork_thread",
    "list_interrupts", "get_interrupt", "claim_interrupt", "release_interrupt",
    "assign_interrupt", "resume_interrupt", "resume_targeted", "resume_map", "bulk_resume",
    "cancel_at_breakpoint", "add_steering", "list_audit",
]


def operations() -> list[dict[str, Any]]:
    paths = api.get_openapi_schema()["paths"]
    return [operation for methods in paths.values() for operation in methods.values()]


def test_operation_ids_do_not_depend_on_the_module_a_view_lives_in() -> None:
    ids = sorted(operation["operationId"] for operation in operations())
    assert ids == sorted([*(f"forgeui_api_requests_{name}" for name in REQUESTS),
                          *(f"forgeui_api_routes_{name}" for name in ROUTES)])

