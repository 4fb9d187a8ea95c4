"""An interrupt payload's ``answer_schema`` is checked when the interrupt is created.

A malformed schema would otherwise surface only when someone tries to answer, as an
interrupt nobody can answer; failing the node names the problem where the graph's author
sees it.
"""

from __future__ import annotations

from typing import Any

from .errors import ForgeError


def check_answer_schema(node: str, payload: Any) -> None:
    """Raise ``ForgeError`` when ``payload["answer_schema"]`` is not a valid JSON Schema."""
    if not isinstance(payload, dict) or "answer_schema" not in payload:
        return
    schema = payload["answer_schema"]
    if not isinstance(schema, dict) or not isinstance(schema.get("$schema", ""), str):
        raise ForgeError(f"interrupt in node {node!r}: answer_schema must be a JSON Schema "
                         f"object, not {schema!r}")
    import jsonschema  # type: ignore[import-untyped]  # only for graphs declaring schemas

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ForgeError(f"interrupt in node {node!r}: answer_schema is not a valid JSON "
                         f"Schema at {where}: {exc.message}") from None
