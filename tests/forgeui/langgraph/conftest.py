"""Fixtures for the LangGraph tests: graphs registered for a few tests only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings

from tests.forgeui.apiclient import Api

# Beside the settings' FORGE_GRAPHS, for the tests that need them.
MORE_GRAPHS = {"lg_loop": "tests.forgeui.langgraph.team_graphs:chat_loop",
               "lg_thrice": "tests.forgeui.langgraph.team_graphs:thrice"}


@pytest.fixture
def more_graphs(users: dict[str, User]) -> Iterator[Api]:
    """The API as the test users, with ``MORE_GRAPHS`` registered too."""
    with override_settings(FORGE_GRAPHS={**settings.FORGE_GRAPHS, **MORE_GRAPHS}):
        yield Api(users)
