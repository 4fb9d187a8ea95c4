"""The JSON API under ``/api/``: ninja routes, request and response schemas, bearer auth."""
