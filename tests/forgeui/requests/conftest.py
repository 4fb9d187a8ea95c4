"""The live forges of the request tests start from one database per session, which holds
the demo users and the agents' tokens."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Seed
from tests.forgeui.requests.live import with_agents


@pytest.fixture(scope="session")
def agents_seeded(tmp_path_factory: pytest.TempPathFactory, seeded: Seed) -> Seed:
    return with_agents(seeded, tmp_path_factory.mktemp("agents-seed"))
