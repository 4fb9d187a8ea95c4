"""Property-based tests of the whole API from its own OpenAPI schema (schemathesis).

Every operation gets a bounded number of generated requests, sent in-process through
Django's WSGI handler with a superuser's bearer token, over a database holding runs of the
demo graphs. Checks: no 5xx; status codes, content types, headers and bodies as the schema
declares them. Generated ids rarely match a stored one, so a 404 is fine
(``positive_data_acceptance`` is off); ``negative_data_rejection`` is off too, because the
token header we set replaces the header schemathesis mutates, and its WSGI transport sends
some "invalid" query arrays as one valid string, so it reports refusals that did happen
elsewhere as acceptances. Hostile input has its own tests (``test_api_input``).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from forgeui.api.routes import api
from forgeui.models import ApiToken
from forgeui.runs import services
from tests.conftest import deep

# Bounded so the suite stays fast; `make test-deep` hunts longer, and
# FORGE_API_FUZZ_EXAMPLES=500 longer still.
MAX_EXAMPLES = int(os.environ.get("FORGE_API_FUZZ_EXAMPLES", "200" if deep() else "25"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]

# /api/openapi.json needs a token, and there is no database at collection time: take the
# very document that route serves straight from the API object, and call the WSGI app.
schema = schemathesis.openapi.from_dict(api.get_openapi_schema())
schema.app = get_wsgi_application()


@pytest.fixture
def token(transactional_db: None) -> str:
    """A superuser's token, and a few runs paused at their interrupts to read and answer."""
    admin = User.objects.create_superuser("st-admin", password="x")
    for graph, value in [("transfer", {"amount": 1}), ("supervisor", {"topic": "t"}),
                         ("parallel_approvals", {"amount": 2}), ("nested", {"case": 3})]:
        services.start_run(admin, graph, value)
    return ApiToken.objects.issue(admin, name="schemathesis")[1]


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=MAX_EXAMPLES <= 25,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: Any, token: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)
