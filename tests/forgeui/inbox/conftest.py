"""The inbox tests share test_consumers' socket fixture and helpers."""

from tests.forgeui.inbox.test_consumers import connect  # noqa: F401 - a fixture, by name
