"""``manage.py mcp``: forge's MCP server over stdio, as the agent in ``FORGE_AGENT_TOKEN``.

For a local MCP client (``claude --mcp-config``, Cursor, ...). Its tools wait for a
person through the database: with the Redis channel layer a decision reaches them at
once, with the embedded in-memory layer on their next check (every second).
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from forgeui.apps import OPERATIONS_CHECKS
from forgeui.requests.mcp_server import build
from forgeui.requests.service import NotAllowed, agent_for_token

STDIO_RECHECK_S = 1.0


class Command(BaseCommand):
    help = "Serve forge's MCP tools (request_approval, ask_human) on stdin/stdout."
    requires_system_checks = OPERATIONS_CHECKS

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            caller = agent_for_token(os.environ.get("FORGE_AGENT_TOKEN", "").strip())
        except NotAllowed as exc:
            raise CommandError(f"FORGE_AGENT_TOKEN: {exc}") from None
        build(fixed=caller, recheck_s=STDIO_RECHECK_S).run("stdio")
