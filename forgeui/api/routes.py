"""The JSON API under ``/api/``: one ``NinjaAPI`` with a router per feature.

Handlers validate, call one service or one queryset, and return; each feature module holds
its routes and the shapes they take and give (``runs``, ``threads``, ``interrupts``,
``answers``, ``audit``, ``requests``). Every refusal is mapped to HTTP once, by
``forgeui.api.errors``.
"""

from typing import Any

from django.http import HttpRequest
from django.urls import register_converter
from ninja import NinjaAPI, Router
from ninja.operation import Operation

from forgeui.api import answers, audit, errors, interrupts, runs, threads
from forgeui.api import requests as agent_requests
from forgeui.api.auth import api_auth, login_required_for_docs
from forgeui.api.parser import MAX_BODY_BYTES, MAX_DEPTH, StrictJSONParser
from forgeui.runs.exceptions import NotFound

DESCRIPTION = f"""
Authenticate with `Authorization: Bearer <token>` (`manage.py create_token USERNAME`, or
the admin) or a browser session (unsafe methods then need the `X-CSRFToken` header).

Limits: request bodies up to {MAX_BODY_BYTES} bytes (413 beyond); UTF-8 JSON only, nested
at most {MAX_DEPTH} levels, no NaN/Infinity, integers within ±(2**53-1), no NUL
characters (422). Unknown body fields are refused (422). Lists answer
`{{"items": [...], "count": N}}` and take `limit` (≤ 200) and `offset`.
"""


class AnyPathConverter:
    """Like Django's ``path`` converter, newlines included: ids are opaque to the URL."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyPathConverter, "anypath")


class ForgeAPI(NinjaAPI):
    """Operation ids do not follow a view from module to module: clients generated from
    the schema keep their names (``forgeui_api_routes_<view>``, and the requests' own)."""

    def get_openapi_operation_id(self, operation: Operation) -> str:
        if operation.view_func.__module__ == agent_requests.__name__:
            return super().get_openapi_operation_id(operation)
        return f"forgeui_api_routes_{operation.view_func.__name__}"


api = ForgeAPI(title="forge", version="1", description=DESCRIPTION, auth=api_auth,
               parser=StrictJSONParser(), urls_namespace="api",
               docs_decorator=login_required_for_docs)
errors.install(api)
fallback = Router(tags=["forge"])


@fallback.api_operation(["GET", "POST", "PUT", "PATCH", "DELETE"], "/{anypath:rest}",
                        include_in_schema=False, auth=None)
def not_found(request: HttpRequest, rest: str) -> Any:
    """Unknown paths under /api/ answer JSON, like every other error here."""
    raise NotFound(f"no API route /api/{rest}")


# Django tries the paths in this order: /interrupts/bulk_resume (answers) before
# /interrupts/{interrupt_id} (interrupts), and the catch-all last.
for feature in (agent_requests, runs, threads, answers, interrupts, audit):
    api.add_router("", feature.router)
api.add_router("", fallback)
